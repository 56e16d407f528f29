package main

import (
	"context"

	"github.com/sundial-run/sundial/deploy/local/internal/suite"
	dispatcher "github.com/sundial-run/sundial/services/dispatcher/app"
	gateway "github.com/sundial-run/sundial/services/gateway/app"
	notifier "github.com/sundial-run/sundial/services/notifier/app"
	scheduler "github.com/sundial-run/sundial/services/scheduler/app"
)

// services are Sundial's four services, started in this order: the
// gateway first, so that a taken HTTP port fails before anything runs.
func services() []suite.Service {
	return []suite.Service{
		suite.App("gateway", gateway.ConfigFromEnv, gateway.New),
		suite.App("scheduler", scheduler.ConfigFromEnv, scheduler.New),
		suite.App("dispatcher", dispatcher.ConfigFromEnv, dispatcher.New),
		suite.App("notifier", notifier.ConfigFromEnv, notifier.New),
	}
}

func createProject(ctx context.Context, databaseURL, secretKeys, name, domain string) (suite.Credentials, error) {
	c, err := gateway.CreateProject(ctx, gateway.Database{URL: databaseURL, SecretKeys: secretKeys}, name, domain)
	return suite.Credentials{ProjectID: c.ProjectID, APIKey: c.APIKey, SigningKey: c.SigningKey}, err
}

func createUser(ctx context.Context, databaseURL, projectID, email, password string) error {
	_, err := gateway.CreateUser(ctx, gateway.Database{URL: databaseURL}, gateway.NewUser{
		Email: email, ProjectID: projectID, Role: "owner", Password: password,
	})
	return err
}
