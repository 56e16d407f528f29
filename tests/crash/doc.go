// Package crash kills Sundial's services as real processes in the middle of
// their work and checks that no hook is lost and that duplicates stay within
// what at-least-once delivery allows.
package crash
