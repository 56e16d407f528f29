package report

// Goal is one of the goals against its figure.
type Goal struct {
	What   string  `json:"what"`
	Target string  `json:"target"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Met    bool    `json:"met"`
}
