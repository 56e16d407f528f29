module github.com/sundial-run/sundial/services/dispatcher

go 1.26.0

replace (
	github.com/sundial-run/sundial/migrations => ../../migrations
	github.com/sundial-run/sundial/pkg => ../../pkg
)
