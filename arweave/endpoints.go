package arweave

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrEndpoint is returned when a gateway, GraphQL or bundler URL is not an
// http(s) URL, or an endpoint list is empty or malformed.
var ErrEndpoint = errors.New("arweave: bad endpoint")

// Endpoints are where a Client reads and writes: data gateways, asked in
// order (the first is also where transactions are posted first), and an
// optional GraphQL endpoint asked before the gateways' own /graphql.
type Endpoints struct {
	Gateways []string // base URLs, without trailing slash; at least one
	GraphQL  string   // full GraphQL URL (…/graphql), "" for the gateways'
}

// maxEndpoints bounds an endpoint list: each failing gateway costs a call
// its own attempts.
const maxEndpoints = 8

// ParseEndpoints reads an endpoint list: http(s) URLs separated by commas,
// each a data gateway, tried in order; an element written "graphql=URL"
// names the GraphQL endpoint (the full URL, e.g.
// https://arweave-search.goldsky.com/graphql). One plain URL is the common
// case. Blank elements are ignored; duplicates are dropped.
//
//	https://arweave.net,https://ar-io.dev,graphql=https://arweave-search.goldsky.com/graphql
func ParseEndpoints(spec string) (Endpoints, error) {
	var ep Endpoints
	seen := map[string]bool{}
	for _, el := range strings.Split(spec, ",") {
		el = strings.TrimSpace(el)
		if el == "" {
			continue
		}
		if v, ok := strings.CutPrefix(el, "graphql="); ok {
			if ep.GraphQL != "" {
				return Endpoints{}, fmt.Errorf("%w: %q names two GraphQL endpoints", ErrEndpoint, spec)
			}
			u, err := CheckURL(v)
			if err != nil {
				return Endpoints{}, err
			}
			ep.GraphQL = u
			continue
		}
		u, err := CheckURL(el)
		if err != nil {
			return Endpoints{}, err
		}
		if !seen[u] {
			seen[u] = true
			ep.Gateways = append(ep.Gateways, u)
		}
	}
	if len(ep.Gateways) == 0 {
		return Endpoints{}, fmt.Errorf("%w: %q names no gateway", ErrEndpoint, spec)
	}
	if len(ep.Gateways) > maxEndpoints {
		return Endpoints{}, fmt.Errorf("%w: %d gateways, at most %d", ErrEndpoint, len(ep.Gateways), maxEndpoints)
	}
	return ep, nil
}

// String writes the endpoints back as ParseEndpoints reads them.
func (ep Endpoints) String() string {
	s := strings.Join(ep.Gateways, ",")
	if ep.GraphQL != "" {
		s += ",graphql=" + ep.GraphQL
	}
	return s
}

// Each returns one Endpoints per gateway (each with the shared GraphQL
// endpoint left out: comparing gateways means asking each its own index).
func (ep Endpoints) Each() []Endpoints {
	out := make([]Endpoints, len(ep.Gateways))
	for i, g := range ep.Gateways {
		out[i] = Endpoints{Gateways: []string{g}}
	}
	return out
}

// CheckURL returns u without trailing slash, or ErrEndpoint unless it is an
// http(s) URL with a host.
func CheckURL(u string) (string, error) {
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || strings.ContainsAny(u, " ,") {
		return "", fmt.Errorf("%w: %q is not an http(s) URL", ErrEndpoint, u)
	}
	return strings.TrimRight(u, "/"), nil
}
