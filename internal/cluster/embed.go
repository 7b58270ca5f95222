package cluster

import (
	"fmt"
	"net/url"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// EmbedConfig configures StartEmbedded.
type EmbedConfig struct {
	// Name is the server's name (unique in the cluster).
	Name string
	// Host and Port are the client listener (Port -1: any free port).
	Host string
	Port int
	// ClusterName, ClusterHost and ClusterPort are the route listener
	// peers connect to; Routes are the peers' route URLs
	// (nats-route://host:port). No ClusterPort: a single server.
	ClusterName string
	ClusterHost string
	ClusterPort int
	Routes      []string
	// StoreDir holds JetStream's files.
	StoreDir string
	// MaxPayload caps one message (default 8 MiB: a forwarded request or
	// answer carries a whole JSON body).
	MaxPayload int32
}

// StartEmbedded starts a JetStream server in this process and waits until
// it takes connections.
func StartEmbedded(c EmbedConfig) (*server.Server, error) {
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.MaxPayload <= 0 {
		c.MaxPayload = 8 << 20
	}
	o := &server.Options{ServerName: c.Name, Host: c.Host, Port: c.Port, JetStream: true, StoreDir: c.StoreDir,
		MaxPayload: c.MaxPayload, NoSigs: true, NoLog: true}
	if c.ClusterPort != 0 {
		if c.ClusterHost == "" {
			c.ClusterHost = c.Host
		}
		// NoAdvertise: the embedded server's clients are its own node (and
		// nodes told its address); advertising its peers' client addresses,
		// loopback by default, would send a remote client to addresses
		// that are not its to reach. A client reaches other servers only
		// through the URLs it was given.
		o.Cluster = server.ClusterOpts{Name: c.ClusterName, Host: c.ClusterHost, Port: c.ClusterPort, NoAdvertise: true}
		for _, r := range c.Routes {
			u, err := url.Parse(r)
			if err != nil {
				return nil, fmt.Errorf("embedded NATS: route %q: %w", r, err)
			}
			o.Routes = append(o.Routes, u)
		}
	}
	s, err := server.NewServer(o)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("embedded NATS %s: not ready after 30s", c.Name)
	}
	return s, nil
}
