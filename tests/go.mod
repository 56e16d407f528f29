module github.com/sundial-run/sundial/tests

go 1.26.0
