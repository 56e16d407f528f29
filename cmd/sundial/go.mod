module github.com/sundial-run/sundial/cmd/sundial

go 1.26.0

replace github.com/sundial-run/sundial/sdk => ../../sdk

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/coder/websocket v1.8.15
	github.com/spf13/cobra v1.10.2
	github.com/stretchr/testify v1.12.1
	github.com/sundial-run/sundial/sdk v0.0.0-00010101000000-000000000000
)

require (
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
