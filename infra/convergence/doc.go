// Package convergence holds the end-to-end proofs that the wiki and the
// tracker never silently disagree about a requirement's issue links (API
// version 5): a model-based test that runs random histories against the
// whole local stack (DynamoDB Local, moto, the real Lambda bootstraps behind
// the local gateways) with fault-injecting proxies in front of the trackers
// and the wikis, and one regression test per failure the convergence work
// fixed. The package has no code of its own; docs/testing.md describes the
// tests and how to run more histories.
package convergence
