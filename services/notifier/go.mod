module github.com/sundial-run/sundial/services/notifier

go 1.26.0

replace (
	github.com/sundial-run/sundial/migrations => ../../migrations
	github.com/sundial-run/sundial/pkg => ../../pkg
)
