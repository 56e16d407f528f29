// Package testsupport checks that test support stays out of the services'
// production builds: the test kit (testkit/), the test-only SQL of each
// service (internal/storetest) and the services' own test-support packages
// (named ...test, or fixture) are for tests and benchmarks only.
package testsupport
