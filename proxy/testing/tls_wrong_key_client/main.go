// A TLS 1.3 client for one test: it presents a certificate together with a private key that
// does not belong to it, which node:tls and openssl refuse to do. The mesh's server must
// reject it, because the client cannot produce a valid CertificateVerify.
//
// usage: tls_wrong_key_client <addr> <server-name> <ca.pem> <cert.pem> <other-key.pem>
// Prints "accepted <echo>" or "refused <error>".
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func firstBlock(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Println("setup", err)
		os.Exit(2)
	}
	p, _ := pem.Decode(b)
	if p == nil {
		fmt.Println("setup: no PEM block in", path)
		os.Exit(2)
	}
	return p.Bytes
}

func main() {
	if len(os.Args) != 6 {
		fmt.Println("setup: want 5 arguments")
		os.Exit(2)
	}
	key, err := x509.ParsePKCS8PrivateKey(firstBlock(os.Args[5]))
	if err != nil {
		fmt.Println("setup", err)
		os.Exit(2)
	}
	anchors := x509.NewCertPool()
	anchors.AddCert(must(x509.ParseCertificate(firstBlock(os.Args[3]))))
	conf := &tls.Config{
		ServerName:   os.Args[2],
		RootCAs:      anchors,
		MinVersion:   tls.VersionTLS13,
		NextProtos:   []string{"transport.l5d.io/v1"},
		Certificates: []tls.Certificate{{Certificate: [][]byte{firstBlock(os.Args[4])}, PrivateKey: key}},
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", os.Args[1], conf)
	if err != nil {
		fmt.Println("refused", err)
		return
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write([]byte("hello")); err != nil {
		fmt.Println("refused", err)
		return
	}
	conn.CloseWrite()
	got, err := io.ReadAll(conn)
	if err != nil || len(got) == 0 {
		fmt.Println("refused", err)
		return
	}
	fmt.Println("accepted", string(got))
}

func must(c *x509.Certificate, err error) *x509.Certificate {
	if err != nil {
		fmt.Println("setup", err)
		os.Exit(2)
	}
	return c
}
