// Command benchnats runs a NATS server with JetStream for the end-to-end
// benchmark, as a process of its own like a production NATS: file store in
// -store, client and monitoring ports chosen freely. Once it accepts
// clients it prints one JSON line, {"url": ..., "monitor": ...}, on stdout;
// SIGTERM or SIGINT stops it.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchnats:", err)
		os.Exit(1)
	}
}

func run() error {
	store := flag.String("store", "", "JetStream store folder (required)")
	flag.Parse()
	if *store == "" {
		return errors.New("-store is required")
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: "sundial-bench",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		HTTPHost:   "127.0.0.1",
		HTTPPort:   server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   *store,
		MaxPayload: 8 << 20, // as make run and docker-compose: a 1 MiB hook fits
		NoLog:      true,
		NoSigs:     true,
	})
	if err != nil {
		return fmt.Errorf("nats server: %w", err)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		srv.Shutdown()
		return errors.New("not ready within 10s")
	}
	ready := map[string]string{"url": srv.ClientURL(), "monitor": "http://" + srv.MonitorAddr().String()}
	if err := json.NewEncoder(os.Stdout).Encode(ready); err != nil {
		srv.Shutdown()
		return err
	}
	<-stop
	srv.Shutdown()
	srv.WaitForShutdown()
	return nil
}
