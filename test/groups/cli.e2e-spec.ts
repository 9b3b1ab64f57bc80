// The operator CLI: in-process commands and the thin set of real processes (exit codes, the embedded database).
import '../cli.e2e-spec';
