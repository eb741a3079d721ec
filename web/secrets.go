package web

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentctl/agentctl/home"
	"github.com/agentctl/agentctl/internal/atomicfile"
)

// loadToken reads the dashboard's token, making it on first use: 32 random
// bytes, kept 0600 so that a bookmark or a phone's saved cookie outlives a
// restart. A token file others may read is tightened first.
func loadToken(h home.Home) (string, error) {
	if err := h.Ensure(); err != nil {
		return "", err
	}
	path := h.WebToken()
	b, err := os.ReadFile(path)
	switch {
	case err == nil && len(strings.TrimSpace(string(b))) >= 32:
		if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(path, 0o600); err != nil {
				return "", fmt.Errorf("make the web token %s private: %w", path, err)
			}
		}
		return strings.TrimSpace(string(b)), nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("read the web token: %w", err)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("make a web token: %w", err)
	}
	tok := hex.EncodeToString(raw)
	if err := atomicfile.Write(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write the web token: %w", err)
	}
	return tok, nil
}

// loadTLS returns the certificate to serve and its SHA-256 fingerprint:
// the one given, or a self-signed one made once under the home.
func loadTLS(cfg Config) (*tls.Config, string, error) {
	certFile, keyFile := cfg.TLSCert, cfg.TLSKey
	if cfg.TLSGenerate {
		if certFile != "" || keyFile != "" {
			return nil, "", fmt.Errorf("%s makes its own certificate: give it or %s/%s, not both", cfg.opt("--tls-generate"), cfg.opt("--tls-cert"), cfg.opt("--tls-key"))
		}
		dir := cfg.Home.WebTLS()
		certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
		if _, err := os.Stat(certFile); errors.Is(err, os.ErrNotExist) {
			if err := generateCert(dir, certFile, keyFile, cfg.AllowHosts); err != nil {
				return nil, "", err
			}
		}
	} else if certFile == "" || keyFile == "" {
		return nil, "", fmt.Errorf("TLS needs both %s and %s", cfg.opt("--tls-cert"), cfg.opt("--tls-key"))
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, "", fmt.Errorf("load the TLS certificate %s: %w", certFile, err)
	}
	sum := sha256.Sum256(pair.Certificate[0])
	fp := make([]string, len(sum))
	for i, b := range sum {
		fp[i] = fmt.Sprintf("%02X", b)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, strings.Join(fp, ":"), nil
}

// generateCert writes a self-signed certificate for this machine's names
// and the hosts the user allowed.
func generateCert(dir, certFile, keyFile string, names []string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate a TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return fmt.Errorf("generate a certificate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "agentctl web"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().AddDate(2, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if hn, err := os.Hostname(); err == nil {
		tmpl.DNSNames = append(tmpl.DNSNames, hn)
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() {
				tmpl.IPAddresses = append(tmpl.IPAddresses, n.IP)
			}
		}
	}
	for _, n := range names {
		if h, _, err := net.SplitHostPort(n); err == nil {
			n = h
		}
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if n != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("make a self-signed certificate: %w", err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encode the TLS key: %w", err)
	}
	if err := atomicfile.Write(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		return fmt.Errorf("write the TLS key: %w", err)
	}
	if err := atomicfile.Write(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("write the TLS certificate: %w", err)
	}
	return nil
}
