/** cli/signals: a long-running command's stop: `fn` on SIGTERM or SIGINT; returns the unsubscribe. */
export function processSignals(fn: () => void): () => void {
  process.on('SIGTERM', fn);
  process.on('SIGINT', fn);
  return () => {
    process.off('SIGTERM', fn);
    process.off('SIGINT', fn);
  };
}
