// Package browser tests the dashboard in a real Chromium, driven from Go
// through the DevTools protocol (chromedp), against Sundial's services
// running in the test's process on a real PostgreSQL and NATS. Every page a
// test visits is saved as a full-page screenshot (docs/dashboard.md,
// "Browser tests"). Tests only.
package browser
