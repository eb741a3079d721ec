package openclaw

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentctl/agentctl/internal/atomicfile"
)

// IdentityFile is where the device key lives, relative to AGENTCTL_HOME.
const IdentityFile = "identity/openclaw-device.json"

// Identity is the Ed25519 device key the gateway pairs and scopes.
type Identity struct {
	// DeviceID is the lowercase hex SHA-256 of the raw public key, as the
	// gateway derives it.
	DeviceID string
	Public   ed25519.PublicKey
	private  ed25519.PrivateKey
}

// identityRecord is the file format: the raw 32-byte public key and the
// 32-byte private seed, in unpadded base64url.
type identityRecord struct {
	Version   int    `json:"version"`
	DeviceID  string `json:"deviceId"`
	PublicKey string `json:"publicKey"`
	Seed      string `json:"seed"`
}

func deviceID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:])
}

func newIdentity(seed []byte) Identity {
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	return Identity{DeviceID: deviceID(pub), Public: pub, private: priv}
}

// LoadOrCreateIdentity reads the device key at path, creating it (mode 0600,
// directory 0700) when absent. Two processes creating it at once end up with
// the same key: the file is linked into place, never renamed over another.
func LoadOrCreateIdentity(path string) (Identity, error) {
	id, err := loadIdentity(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return Identity{}, fmt.Errorf("create openclaw device identity: %w", err)
	}
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return Identity{}, fmt.Errorf("create openclaw device identity: %w", err)
	}
	id = newIdentity(seed)
	rec := identityRecord{
		Version:   1,
		DeviceID:  id.DeviceID,
		PublicKey: base64.RawURLEncoding.EncodeToString(id.Public),
		Seed:      base64.RawURLEncoding.EncodeToString(seed),
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return Identity{}, fmt.Errorf("encode openclaw device identity: %w", err)
	}
	if err := linkNew(path, append(data, '\n')); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return loadIdentity(path)
		}
		return Identity{}, fmt.Errorf("create openclaw device identity: %w", err)
	}
	return id, nil
}

// linkNew writes data to a private temporary file and links it to path,
// failing with fs.ErrExist when path already exists.
func linkNew(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return err
	}
	return atomicfile.SyncDir(dir)
}

func loadIdentity(path string) (Identity, error) {
	f, err := os.Open(path)
	if err != nil {
		return Identity{}, fmt.Errorf("read openclaw device identity: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Identity{}, fmt.Errorf("read openclaw device identity: %w", err)
	}
	// The seed is a credential: a file others can read is tightened, as the
	// owner would want, rather than used as is.
	if st.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
			return Identity{}, fmt.Errorf("openclaw device identity %s is readable by others and cannot be restricted: %w", path, err)
		}
	}
	var rec identityRecord
	if err := json.NewDecoder(f).Decode(&rec); err != nil {
		return Identity{}, fmt.Errorf("openclaw device identity %s is corrupt (remove it to make a new one): %w", path, err)
	}
	if rec.Version != 1 {
		return Identity{}, fmt.Errorf("openclaw device identity %s has unknown version %d", path, rec.Version)
	}
	seed, err := base64.RawURLEncoding.DecodeString(rec.Seed)
	if err != nil || len(seed) != ed25519.SeedSize {
		return Identity{}, fmt.Errorf("openclaw device identity %s is corrupt (remove it to make a new one): bad seed", path)
	}
	id := newIdentity(seed)
	if rec.DeviceID != id.DeviceID {
		return Identity{}, fmt.Errorf("openclaw device identity %s is corrupt (remove it to make a new one): device id does not match the key", path)
	}
	return id, nil
}

// signedFields are the inputs of the device signature.
type signedFields struct {
	DeviceID     string
	ClientID     string
	ClientMode   string
	Role         string
	Scopes       []string
	SignedAtMs   int64
	Token        string
	Nonce        string
	Platform     string
	DeviceFamily string
}

// signaturePayload is the v3 string the gateway verifies: the fields joined
// by "|", platform and device family lowercased.
func signaturePayload(f signedFields) string {
	return strings.Join([]string{
		"v3",
		f.DeviceID,
		f.ClientID,
		f.ClientMode,
		f.Role,
		strings.Join(f.Scopes, ","),
		strconv.FormatInt(f.SignedAtMs, 10),
		f.Token,
		f.Nonce,
		strings.ToLower(f.Platform),
		strings.ToLower(f.DeviceFamily),
	}, "|")
}

// prove signs the connect fields with the device key.
func (id Identity) prove(f signedFields) *deviceProof {
	sig := ed25519.Sign(id.private, []byte(signaturePayload(f)))
	return &deviceProof{
		ID:        id.DeviceID,
		PublicKey: base64.RawURLEncoding.EncodeToString(id.Public),
		Signature: base64.RawURLEncoding.EncodeToString(sig),
		SignedAt:  f.SignedAtMs,
		Nonce:     f.Nonce,
	}
}
