/**
 * cli/errors: a command failed for a reason the user can act on (not a
 * usage error, not a bug): the CLI prints `nodenet <cmd>: <message>` and
 * exits 1, without a stack.
 */
export class CommandError extends Error {
  override name = 'CommandError';
}
