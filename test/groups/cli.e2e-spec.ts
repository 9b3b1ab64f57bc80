// The operator CLI: in-process commands and the thin set of real processes (exit codes; the embedded
// database's are in long-running.e2e-spec.ts).
import '../cli.e2e-spec';
