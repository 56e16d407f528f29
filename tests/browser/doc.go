// Package browser tests the dashboard in a real Chromium, driven from Go
// through the DevTools protocol (chromedp), against Sundial's services
// running in the test's process on a real PostgreSQL and NATS. Every page a
// test reaches is checked with axe-core for serious accessibility
// violations, and a failed test saves a screenshot of its last page
// (docs/dashboard.md, "Browser tests"). Tests only.
package browser
