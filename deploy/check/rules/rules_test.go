package rules

import "testing"

func none(string) bool { return false }

func TestFloatingImage(t *testing.T) {
	floating := []string{"mongo:7", "mongo", "minio/minio:latest", "nginx:1.27-alpine", "rabbitmq:3-management", "peertrain/auth:dev", "localhost:5000/x"}
	for _, ref := range floating {
		if FloatingImage(ref, none) == "" {
			t.Errorf("%s should float", ref)
		}
	}
	pinned := []string{"mongo:7.0.14", "nginx:1.27.5-alpine", "minio/minio:RELEASE.2025-04-22T22-12-26Z", "prom/prometheus:v2.53.4", "x@sha256:abc", "localhost:5000/x:1.2.3"}
	for _, ref := range pinned {
		if why := FloatingImage(ref, none); why != "" {
			t.Errorf("%s should be pinned: %s", ref, why)
		}
	}
}

func TestCredentialProblem(t *testing.T) {
	secret := func(v string) bool { return v == "S" }
	ok := [][2]string{{"A_PASSWORD", "S"}, {"A_PASSWORD", ""}, {"AMQP_URL", "amqp://u:S@h/"}, {"AMQP_URL", "amqp://h/"}, {"X_PASSWORD_FILE", "/run/secrets/x"}, {"LOG_LEVEL", "admin"}}
	for _, kv := range ok {
		if why := CredentialProblem(kv[0], kv[1], secret); why != "" {
			t.Errorf("%v: %s", kv, why)
		}
	}
	bad := [][2]string{{"A_PASSWORD", "admin"}, {"S3_SECRET_KEY", "minioadmin"}, {"AMQP_URL", "amqp://admin:admin@h/"}, {"MC_HOST_local", "http://u:x@minio:9000"}}
	for _, kv := range bad {
		if CredentialProblem(kv[0], kv[1], secret) == "" {
			t.Errorf("%v should be refused", kv)
		}
	}
}
