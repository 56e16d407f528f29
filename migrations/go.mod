module github.com/sundial-run/sundial/migrations

go 1.26.0
