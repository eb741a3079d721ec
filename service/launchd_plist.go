package service

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"path/filepath"
)

// Log files launchd writes the service's stdout and stderr to, inside
// AGENTCTL_HOME.
const (
	LaunchdStdoutLog = "service.out.log"
	LaunchdStderrLog = "service.err.log"
)

// launchdThrottleSec is the least time between two starts of the job.
const launchdThrottleSec = 5

// RenderLaunchdPlist returns the launchd job description for spec.
func RenderLaunchdPlist(spec Spec) ([]byte, error) {
	if err := spec.Validate(); err != nil {
		return nil, fmt.Errorf("render launchd plist: %w", err)
	}
	if spec.User == TemplateUser {
		return nil, fmt.Errorf("render launchd plist: launchd has no template jobs")
	}
	p := &plistWriter{}
	p.raw(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p.raw(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	p.raw(`<plist version="1.0">` + "\n")
	p.open("dict")
	p.key("Label")
	p.str(spec.LaunchdLabel())
	p.key("ProgramArguments")
	p.open("array")
	p.str(spec.Exe)
	for _, a := range spec.args() {
		p.str(a)
	}
	p.close("array")
	if spec.Home != "" || spec.Path != "" {
		p.key("EnvironmentVariables")
		p.open("dict")
		if spec.Home != "" {
			p.key(HomeEnv)
			p.str(spec.Home)
		}
		if spec.Path != "" {
			p.key("PATH")
			p.str(spec.Path)
		}
		p.close("dict")
	}
	if spec.Scope == ScopeSystem {
		p.key("UserName")
		p.str(spec.User)
	}
	p.key("RunAtLoad")
	p.boolean(true)
	// Restart after a crash, not after a clean exit (agentctl daemon stop):
	// the same policy as the systemd unit's Restart=on-failure.
	p.key("KeepAlive")
	p.open("dict")
	p.key("SuccessfulExit")
	p.boolean(false)
	p.close("dict")
	p.key("ThrottleInterval")
	p.integer(launchdThrottleSec)
	// When the service exits, launchd would kill what is left in its process
	// group; session monitors must outlive the service.
	p.key("AbandonProcessGroup")
	p.boolean(true)
	// Without it launchd throttles the job's CPU and I/O, and with it every
	// agent the service starts.
	p.key("ProcessType")
	p.str("Interactive")
	if spec.Home != "" {
		p.key("StandardOutPath")
		p.str(filepath.Join(spec.Home, LaunchdStdoutLog))
		p.key("StandardErrorPath")
		p.str(filepath.Join(spec.Home, LaunchdStderrLog))
	}
	p.close("dict")
	p.raw("</plist>\n")
	return p.buf.Bytes(), nil
}

// plistWriter writes an XML property list, indented with tabs as Apple's
// tools do.
type plistWriter struct {
	buf   bytes.Buffer
	depth int
}

func (p *plistWriter) raw(s string) { p.buf.WriteString(s) }

func (p *plistWriter) indent() {
	for range p.depth {
		p.buf.WriteByte('\t')
	}
}

func (p *plistWriter) open(tag string) {
	p.indent()
	p.buf.WriteString("<" + tag + ">\n")
	p.depth++
}

func (p *plistWriter) close(tag string) {
	p.depth--
	p.indent()
	p.buf.WriteString("</" + tag + ">\n")
}

func (p *plistWriter) element(tag, text string) {
	p.indent()
	p.buf.WriteString("<" + tag + ">")
	// Escaping into a bytes.Buffer cannot fail.
	_ = xml.EscapeText(&p.buf, []byte(text))
	p.buf.WriteString("</" + tag + ">\n")
}

func (p *plistWriter) key(k string)  { p.element("key", k) }
func (p *plistWriter) str(s string)  { p.element("string", s) }
func (p *plistWriter) integer(n int) { p.element("integer", fmt.Sprint(n)) }
func (p *plistWriter) boolean(v bool) {
	p.indent()
	if v {
		p.buf.WriteString("<true/>\n")
	} else {
		p.buf.WriteString("<false/>\n")
	}
}
