package api

import (
	"fmt"
	"strconv"
	"strings"
)

// Protocol is the version of this API as a client and a service on
// different hosts agree on it: it changes when one side of a different
// version could no longer understand the other. Both ends of a remote
// connection must speak the same.
const Protocol = 1

// dialGreetingPrefix starts the line `agentctl dial-stdio` writes once it
// has reached its service, before any byte of the API.
const dialGreetingPrefix = "agentctl-dial-stdio"

// DialGreeting is that line (newline included): the protocol the far end
// speaks and its agentctl version.
func DialGreeting(protocol int, version string) string {
	return fmt.Sprintf("%s protocol=%d version=%s\n", dialGreetingPrefix, protocol, version)
}

// ParseDialGreeting reads a greeting line (without its newline). ok is
// false for a line that is not one.
func ParseDialGreeting(line string) (protocol int, version string, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 2 || fields[0] != dialGreetingPrefix {
		return 0, "", false
	}
	protocol = -1
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "protocol":
			n, err := strconv.Atoi(v)
			if err != nil {
				return 0, "", false
			}
			protocol = n
		case "version":
			version = v
		}
	}
	return protocol, version, protocol >= 0
}

// HeaderServiceVersion is the response header in which the service names
// its version on every answer: a CLI of another version says so.
const HeaderServiceVersion = "Agentctl-Version"
