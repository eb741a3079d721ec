package agenttest

// CodexProvider is the part of a Codex config.toml that points it at the
// fake model server at baseURL and keeps it offline: no retries, and none
// of the analytics, feedback or plugin lookups that reach the network.
func CodexProvider(baseURL string) string {
	return `[model_providers.fake]
name = "Fake"
base_url = "` + baseURL + `/v1"
wire_api = "responses"
env_key = "FAKE_API_KEY"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false
[feedback]
enabled = false
[features]
plugins = false
remote_plugin = false
apps = false
`
}

// CodexConfig is a whole config.toml for a Codex on the fake model server
// at baseURL (its API key in $FAKE_API_KEY), offline.
func CodexConfig(baseURL string) string {
	return `model = "fake-model"
model_provider = "fake"
check_for_update_on_startup = false

` + CodexProvider(baseURL)
}
