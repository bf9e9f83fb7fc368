// Under npm (`npm start`, `npm run mock`, `npx flowgate serve`) a SIGTERM to npm ends npm and the
// shell it ran the command in, but not the command: the shell does not pass the signal on, and the
// server kept running with no one to stop it. Started by npm, a long-running command therefore
// stops itself when its parent goes away. A server started otherwise (nohup, a service manager)
// is left alone: its parent may well exit first.

/** Whether npm started this process (npm sets npm_command in the environment of what it runs). */
export function startedByNpm(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.npm_command || env.npm_lifecycle_event);
}

/** Calls `stop` once, when this process's parent changes (it exited); only under npm. Returns the cancel. */
export function stopWhenOrphaned(stop: () => void, { env = process.env, intervalMs = 500 }: { env?: NodeJS.ProcessEnv; intervalMs?: number } = {}): () => void {
  if (!startedByNpm(env)) return () => undefined;
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    stop();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
