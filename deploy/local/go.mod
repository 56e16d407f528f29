module github.com/sundial-run/sundial/deploy/local

go 1.26.0
