module github.com/sundial-run/sundial/sdk

go 1.24
