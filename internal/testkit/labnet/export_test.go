package labnet

// CommandsRun is how many harness commands (ip, nft) this test binary has
// started.
func CommandsRun() int64 { return commandsRun.Load() }
