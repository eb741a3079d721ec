package fakemodel

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultText is the answer when the prompt has no [[text: ...]] directive.
const DefaultText = "hi from fakellm"

// maxDelay bounds [[delay: S]], so a typo cannot park a request for days.
const maxDelay = time.Hour

// maxLimit bounds [[limit: S]]: a week, the longest window providers have.
const maxLimit = 7 * 24 * time.Hour

var directiveRE = regexp.MustCompile(`(?s)\[\[(sleep|bash|escalate|text|delay|error|limit):\s*(.*?)\s*\]\]`)

// directives is what a prompt asks of the fake model.
type directives struct {
	commands []string // one tool call per entry, in order
	// escalate are the commands (by index) that ask to run unsandboxed.
	escalate  map[int]bool
	text      string
	delay     time.Duration
	errorCode int
	// limit, when set, answers with a usage-limit error whose window
	// resets that long after the request.
	limit time.Duration
}

func parseDirectives(prompt string) directives {
	d := directives{text: DefaultText}
	for _, m := range directiveRE.FindAllStringSubmatch(prompt, -1) {
		val := m[2]
		switch m[1] {
		case "sleep":
			n := strings.TrimSpace(val)
			if _, err := strconv.ParseFloat(n, 64); err != nil {
				continue
			}
			d.commands = append(d.commands, fmt.Sprintf("echo sleeping %s; sleep %s; echo slept %s", n, n, n))
		case "bash":
			d.commands = append(d.commands, val)
		case "escalate":
			if d.escalate == nil {
				d.escalate = map[int]bool{}
			}
			d.escalate[len(d.commands)] = true
			d.commands = append(d.commands, val)
		case "text":
			d.text = val
		case "delay":
			if s, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil && s > 0 {
				d.delay = min(time.Duration(s*float64(time.Second)), maxDelay)
			}
		case "limit":
			if s, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil && s > 0 {
				d.limit = min(time.Duration(s*float64(time.Second)), maxLimit)
			}
		case "error":
			if c, err := strconv.Atoi(strings.TrimSpace(val)); err == nil && c >= 400 && c <= 599 {
				d.errorCode = c
			}
		}
	}
	return d
}

// tool is a tool the request offers the model.
type tool struct {
	name   string
	schema map[string]any // JSON schema of the input; nil when none
}

// toolResult is one tool result after the prompt.
type toolResult struct {
	callName string // name of the call it answers, when the request says
	output   string
}

// conversation is a request reduced to what the fake model decides from.
type conversation struct {
	model     string
	stream    bool
	maxTokens int
	nMessages int
	// prompt is the latest plain user text; results are the tool results
	// that follow it, oldest first.
	prompt  string
	results []toolResult
	tools   []tool
	// size is the length of the request's messages in bytes, for usage.
	size int
}

// step is the number of tool directives already carried out: tool results
// since the prompt, not counting polls of a command still running.
func (c *conversation) step() int {
	n := 0
	for _, r := range c.results {
		if r.callName != pollTool {
			n++
		}
	}
	return n
}

// pollTool is Codex's tool for reading more output of a running command.
const pollTool = "write_stdin"

// shellTools are the lower-cased names of tools that run a shell command.
var shellTools = map[string]bool{"bash": true, "shell": true, "exec": true, "exec_command": true, "shell_command": true}

func (c *conversation) shellTool() (tool, bool) {
	for _, t := range c.tools {
		if shellTools[strings.ToLower(t.name)] {
			return t, true
		}
	}
	return tool{}, false
}

func (c *conversation) offers(name string) bool {
	for _, t := range c.tools {
		if t.name == name {
			return true
		}
	}
	return false
}

// reply is what the fake model answers.
type reply struct {
	text      string         // the answer, when not a tool call
	toolName  string         // the tool called, when a tool call
	toolInput map[string]any // its input
	command   string         // the command, for the log
}

func (r reply) isTool() bool { return r.toolName != "" }

func (r reply) String() string {
	if r.isTool() {
		return "tool: " + r.toolName + " " + r.command
	}
	return "text: " + r.text
}

func (r reply) inputJSON() string {
	b, err := json.Marshal(r.toolInput)
	if err != nil {
		panic(fmt.Sprintf("fakemodel: marshal tool input: %v", err))
	}
	return string(b)
}

var runningSessionRE = regexp.MustCompile(`session ID (\d+)`)

// decide picks the answer for a conversation under directives d.
func decide(c *conversation, d directives) reply {
	sh, ok := c.shellTool()
	if ok && len(c.results) > 0 && c.offers(pollTool) {
		// Codex runs long commands in the background and reports "Process
		// running with session ID N"; answering then would end the turn and
		// kill the command, so poll until it has exited.
		last := c.results[len(c.results)-1].output
		if m := runningSessionRE.FindStringSubmatch(last); m != nil && !strings.Contains(last, "Process exited") {
			id, _ := strconv.Atoi(m[1])
			return reply{
				toolName:  pollTool,
				toolInput: map[string]any{"session_id": id, "chars": "", "yield_time_ms": 30000},
				command:   "poll " + m[1],
			}
		}
	}
	step := c.step()
	if ok && step < len(d.commands) {
		cmd := d.commands[step]
		in := shellInput(sh, cmd)
		if props, _ := sh.schema["properties"].(map[string]any); d.escalate[step] && props["sandbox_permissions"] != nil {
			in["sandbox_permissions"], in["justification"] = "require_escalated", "fakellm: "+cmd
		}
		return reply{toolName: sh.name, toolInput: in, command: cmd}
	}
	text := d.text
	if len(d.commands) > 0 {
		text = fmt.Sprintf("%s (after %d tool calls)", d.text, min(step, len(d.commands)))
	}
	return reply{text: text}
}

// shellInput builds a shell tool's input for cmd from the tool's schema.
func shellInput(t tool, cmd string) map[string]any {
	props, _ := t.schema["properties"].(map[string]any)
	if t.name == "Bash" { // Claude Code: its own default timeout is 2 min
		return map[string]any{"command": cmd, "description": "fakellm: " + cmd, "timeout": 600000}
	}
	if _, ok := props["cmd"]; ok { // Codex exec_command; output after 30 s at most
		return map[string]any{"cmd": cmd, "yield_time_ms": 30000}
	}
	if p, ok := props["command"].(map[string]any); ok && p["type"] == "array" {
		return map[string]any{"command": []string{"bash", "-lc", cmd}}
	}
	in := map[string]any{"command": cmd}
	if _, ok := props["description"]; ok { // OpenCode requires one
		in["description"] = "fakellm: " + cmd
	}
	if p, ok := props["timeout"].(map[string]any); ok {
		// OpenCode's bash tool times out after 2 min unless told; its
		// timeout is in milliseconds, which its schema says.
		if desc, _ := p["description"].(string); strings.Contains(strings.ToLower(desc), "millisecond") {
			in["timeout"] = 600000
		}
	}
	return in
}

// tokens estimates a token count from a byte length, as ~4 bytes per token.
func tokens(n int) int { return n/4 + 1 }
