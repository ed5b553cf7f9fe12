module github.com/streamsgroup/streamsgroup/integration/chaos

go 1.26.0

replace github.com/streamsgroup/streamsgroup => ../..

require (
	github.com/Shopify/toxiproxy/v2 v2.5.0
	github.com/google/uuid v1.6.0
	github.com/streamsgroup/streamsgroup v0.0.0-00010101000000-000000000000
	github.com/twmb/franz-go v1.22.3
	github.com/twmb/franz-go/pkg/kadm v1.20.0
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/twmb/franz-go/pkg/kmsg v1.15.1 // indirect
	golang.org/x/crypto v0.51.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	software.sslmate.com/src/go-pkcs12 v0.7.4 // indirect
)
