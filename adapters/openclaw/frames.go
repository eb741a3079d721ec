package openclaw

import (
	"encoding/json"
	"fmt"
)

// ProtocolVersion is the gateway protocol this client speaks. Gateways from
// 2026.9 on accept only version 4 from operator clients.
const ProtocolVersion = 4

// Frame types on the gateway socket: one JSON object per text message.
const (
	frameRequest  = "req"
	frameResponse = "res"
	frameEvent    = "event"
)

// requestFrame is a call from the client.
type requestFrame struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// inboundFrame is any frame from the gateway; Type says which fields are set.
type inboundFrame struct {
	Type string `json:"type"`

	// res
	ID      string          `json:"id,omitempty"`
	OK      bool            `json:"ok,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	Error   *wireError      `json:"error,omitempty"`

	// event
	Event string `json:"event,omitempty"`
	Seq   *int64 `json:"seq,omitempty"`
}

// wireError is the error object of a failed response.
type wireError struct {
	Code         string          `json:"code"`
	Message      string          `json:"message"`
	Details      json.RawMessage `json:"details,omitempty"`
	Retryable    bool            `json:"retryable,omitempty"`
	RetryAfterMs int64           `json:"retryAfterMs,omitempty"`
}

// errorDetails holds the detail fields the client branches on.
type errorDetails struct {
	Code           string   `json:"code"`
	Reason         string   `json:"reason"`
	MissingScope   string   `json:"missingScope"`
	RequiredScopes []string `json:"requiredScopes"`
}

func decodeFrame(data []byte) (inboundFrame, error) {
	var f inboundFrame
	if err := json.Unmarshal(data, &f); err != nil {
		return f, fmt.Errorf("decode gateway frame: %w", err)
	}
	switch f.Type {
	case frameResponse:
		if f.ID == "" {
			return f, fmt.Errorf("decode gateway frame: response without id")
		}
	case frameEvent:
		if f.Event == "" {
			return f, fmt.Errorf("decode gateway frame: event without name")
		}
	default:
		return f, fmt.Errorf("decode gateway frame: unknown type %q", f.Type)
	}
	return f, nil
}

// challenge is the payload of the connect.challenge event the gateway sends
// first on every connection.
type challenge struct {
	Nonce string `json:"nonce"`
	TS    int64  `json:"ts"`
}

// connectParams is the closed schema of the connect request: unknown keys
// are rejected by the gateway, so only documented fields appear here.
type connectParams struct {
	MinProtocol int          `json:"minProtocol"`
	MaxProtocol int          `json:"maxProtocol"`
	Client      clientInfo   `json:"client"`
	Role        string       `json:"role"`
	Scopes      []string     `json:"scopes"`
	Caps        []string     `json:"caps"`
	Auth        *connectAuth `json:"auth,omitempty"`
	Device      *deviceProof `json:"device,omitempty"`
	UserAgent   string       `json:"userAgent,omitempty"`
	Locale      string       `json:"locale,omitempty"`
}

type clientInfo struct {
	ID          string `json:"id"`
	Version     string `json:"version"`
	Platform    string `json:"platform"`
	Mode        string `json:"mode"`
	DisplayName string `json:"displayName,omitempty"`
}

type connectAuth struct {
	Token    string `json:"token,omitempty"`
	Password string `json:"password,omitempty"`
}

type deviceProof struct {
	ID        string `json:"id"`
	PublicKey string `json:"publicKey"`
	Signature string `json:"signature"`
	SignedAt  int64  `json:"signedAt"`
	Nonce     string `json:"nonce"`
}

// helloOK is the payload of a successful connect.
type helloOK struct {
	Type     string `json:"type"`
	Protocol int    `json:"protocol"`
	Server   struct {
		Version string `json:"version"`
		ConnID  string `json:"connId"`
	} `json:"server"`
	Features struct {
		Methods []string `json:"methods"`
		Events  []string `json:"events"`
	} `json:"features"`
	Auth struct {
		Role   string   `json:"role"`
		Scopes []string `json:"scopes"`
	} `json:"auth"`
	Policy struct {
		MaxPayload     int64 `json:"maxPayload"`
		TickIntervalMs int64 `json:"tickIntervalMs"`
	} `json:"policy"`
}
