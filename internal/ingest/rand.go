package ingest

import "crypto/rand"

func copyRandom(b []byte) { rand.Read(b) }
