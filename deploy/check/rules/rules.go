// Package rules holds the checks the compose and Kubernetes checkers share: which
// image references float, which settings are credentials, and where a credential's
// value may come from. Pure functions, no I/O.
package rules

import (
	"net/url"
	"regexp"
	"strings"
)

// DevDefaults are the development credentials of the local stack and docker-compose.yml;
// none may reach a production deployment.
var DevDefaults = []string{"peertrain-dev-admin", "minioadmin", "admin", "guest"}

var (
	credentialKey = regexp.MustCompile(`(?i)(PASSWORD|_PASS$|SECRET|ACCESS_KEY|TOKEN|COOKIE|KEYFILE)`)
	urlKey        = regexp.MustCompile(`(?i)(_URL$|_URI$|MC_HOST)`)
	pinnedTag     = regexp.MustCompile(`^v?\d+\.\d+\.\d+([.+_-].*)?$|^RELEASE\.\d{4}-\d{2}-\d{2}T`)
)

// IsCredentialKey tells whether an environment variable holds a secret by its name.
func IsCredentialKey(key string) bool { return credentialKey.MatchString(key) }

// IsURLKey tells whether an environment variable is an address that may carry one
// (amqp://user:password@host/).
func IsURLKey(key string) bool { return urlKey.MatchString(key) }

// SplitImage returns an image reference's repository, tag and digest.
func SplitImage(ref string) (repo, tag, digest string) {
	if at := strings.Index(ref, "@"); at >= 0 {
		ref, digest = ref[:at], ref[at+1:]
	}
	if colon := strings.LastIndex(ref, ":"); colon > strings.LastIndex(ref, "/") {
		return ref[:colon], ref[colon+1:], digest
	}
	return ref, "", digest
}

// FloatingImage says why an image reference floats (a later pull may give other
// bits), or "" when it is pinned: by digest, by a full x.y.z version (or a MinIO
// RELEASE date) or by a tag the deployer must choose (isRequired says which values
// came from a required variable).
func FloatingImage(ref string, isRequired func(string) bool) string {
	_, tag, digest := SplitImage(ref)
	switch {
	case ref == "":
		return "no image"
	case digest != "":
		return ""
	case tag == "":
		return "no tag (that is :latest)"
	case tag == "latest":
		return "the tag latest"
	case isRequired(tag):
		return ""
	case !pinnedTag.MatchString(tag):
		return "tag " + tag + " is not a full version (x.y.z) and moves"
	}
	return ""
}

// CredentialProblem says why a credential setting's value is not acceptable, or "".
// fromSecret tells whether a value (or a URL's password) came from the deployer's
// environment or a secret store; an empty value is no credential at all (the service
// refuses to start without one where it needs it).
func CredentialProblem(key, value string, fromSecret func(string) bool) string {
	if IsURLKey(key) {
		u, err := url.Parse(value)
		if err != nil || u.User == nil {
			return ""
		}
		password, set := u.User.Password()
		if !set || fromSecret(password) {
			return ""
		}
		return "its password is written in the file"
	}
	if !IsCredentialKey(key) || value == "" || fromSecret(value) {
		return ""
	}
	if strings.HasSuffix(strings.ToUpper(key), "_FILE") && strings.HasPrefix(value, "/run/secrets/") {
		return ""
	}
	for _, d := range DevDefaults {
		if value == d {
			return "it is the development default " + d
		}
	}
	return "it is written in the file"
}
