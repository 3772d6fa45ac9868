/**
 * `nodenet control-plane migrate --from sqlite:DIR --to etcd:URL[,URL...]`:
 * a stopped SQLite control plane's objects copied into etcd
 * (controlplane/store/migrate.ts does it). Parsing is pure
 * (`migrateArgs`); the migration comes from the deps, by default the
 * store's own, loaded only when the command runs.
 */
import { parseStorageSpec } from '../../../controlplane/store/spec.js';
import type { MigrationReport, SqliteToEtcd } from '../../../controlplane/store/migrate.js';
import { FlagError, parseFlags, type FlagSpecs } from './flags.js';
import { formatTable } from './table.js';

export const MIGRATE_USAGE = `usage: nodenet control-plane migrate --from sqlite:DIR --to etcd:URL[,URL...] [--etcd-prefix P] [--allow-non-empty]
Copies every object of a control plane's SQLite store into etcd, for \`nodenet control-plane --storage etcd:...\`
(several API servers on one cluster state). The control plane on DIR must be stopped (its lock is taken, so none
starts meanwhile); its database is opened read-only and left as it was. Objects keep their uid, creationTimestamp
and everything else but their resourceVersion: etcd's revisions restart, so clients list again afterwards.
  --from sqlite:DIR   the control plane's data directory (its state.db); plain \`sqlite\` is the default
                      /var/lib/nodenet/control-plane
  --to etcd:URL,...   the etcd members (http://HOST:PORT)
  --etcd-prefix P     the key prefix to write under (default /registry, what the control plane reads)
  --allow-non-empty   the prefix may hold objects already: the same object under a key is skipped (a migration that
                      stopped half-way goes on), a different one stops the migration before anything is written`;

/** The control plane's default data directory (control-plane-cmd.ts's --data-dir). */
export const DEFAULT_DATA_DIR = '/var/lib/nodenet/control-plane';

export interface MigrateArgs {
  /** The SQLite data directory. */
  readonly dir: string;
  /** The etcd endpoints as given (`http://H:P,...`). */
  readonly endpoints: string;
  readonly prefix: string;
  readonly allowNonEmpty: boolean;
}

const SPECS: FlagSpecs = {
  from: { type: 'string' },
  to: { type: 'string' },
  'etcd-prefix': { type: 'string' },
  'allow-non-empty': { type: 'boolean' },
};

/** The parsed flags of `control-plane migrate`. @throws FlagError naming the flag */
export function migrateArgs(flags: ReadonlyMap<string, string>): MigrateArgs {
  const from = flags.get('from');
  const to = flags.get('to');
  if (from === undefined) throw new FlagError('migrate needs --from sqlite:DIR (the data directory of the stopped control plane)');
  if (to === undefined) throw new FlagError('migrate needs --to etcd:URL[,URL...]');
  const spec = (flag: string, text: string, prefix?: string) => {
    try {
      return parseStorageSpec(text, prefix);
    } catch (e) {
      const m = (e as Error).message;
      if (m.startsWith('--etcd-prefix')) throw new FlagError(m);
      throw new FlagError(m.startsWith('--storage ') ? `--${flag} ${m.slice('--storage '.length)}` : `--${flag}: ${m}`);
    }
  };
  const source = spec('from', from);
  if (source.kind !== 'sqlite') throw new FlagError(`--from ${JSON.stringify(from)}: the source is a SQLite data directory (sqlite:DIR)`);
  const target = spec('to', to, flags.get('etcd-prefix') ?? '/registry');
  if (target.kind !== 'etcd') throw new FlagError(`--to ${JSON.stringify(to)}: the target is etcd (etcd:URL[,URL...])`);
  return { dir: source.dir ?? DEFAULT_DATA_DIR, endpoints: target.endpoints, prefix: target.prefix, allowNonEmpty: flags.get('allow-non-empty') === 'true' };
}

export interface MigrateCmdDeps {
  readonly stdout: (s: string) => void;
  /** Progress lines (default: none). */
  readonly stderr?: (s: string) => void;
  /** The migration (default: controlplane/store/migrate.ts's migrateSqliteToEtcd, imported when the command runs). */
  readonly migrate?: (a: SqliteToEtcd) => Promise<MigrationReport>;
}

const n = (x: number) => Math.round(x).toLocaleString('en-US');

/** What the command prints when the migration is done. */
export function formatMigration(a: MigrateArgs, r: MigrationReport): string {
  const rows = r.resources.map((c) => [c.resource, n(c.copied), ...(r.skipped ? [n(c.skipped)] : [])]);
  const out = [
    `migrated ${n(r.copied)} object(s) from sqlite:${a.dir} (revision ${n(r.sourceRev)}) to etcd:${a.endpoints} under ${a.prefix} ` +
      `in ${(r.ms / 1000).toFixed(1)} s (${n(r.transactions)} transaction(s); etcd revision ${n(r.targetRevBefore)} → ${n(r.targetRev)})`,
    '',
    formatTable(['RESOURCE', 'COPIED', ...(r.skipped ? ['ALREADY THERE'] : [])], rows).trimEnd(),
    '',
    `read back: ${n(r.verified)} object(s) in etcd, each the same as in SQLite but for its resourceVersion` +
      `${r.extra ? `; ${n(r.extra)} key(s) were in etcd before and are left alone` : ''}.`,
    `The SQLite database is unchanged. Start the control plane with --storage etcd:${a.endpoints}${a.prefix !== '/registry' ? ` --etcd-prefix ${a.prefix}` : ''} ` +
      `(and --data-dir ${a.dir} for its CA and tokens); resourceVersions restart, so clients list again.`,
  ];
  return `${out.join('\n')}\n`;
}

/** `nodenet control-plane migrate ...` (argv after `migrate`). */
export async function migrateCommand(argv: readonly string[], deps: MigrateCmdDeps): Promise<number> {
  const p = parseFlags(argv, SPECS);
  if (p.help) {
    deps.stdout(`${MIGRATE_USAGE}\n`);
    return 0;
  }
  if (p.positional.length || p.rest.length) throw new FlagError(`unexpected argument ${JSON.stringify([...p.positional, ...p.rest][0])}`);
  const a = migrateArgs(p.flags);
  const migrate = deps.migrate ?? (await import('../../../controlplane/store/migrate.js')).migrateSqliteToEtcd;
  let said = 0;
  const report = await migrate({
    dir: a.dir, endpoints: a.endpoints, prefix: a.prefix, allowNonEmpty: a.allowNonEmpty,
    onProgress: ({ copied, skipped }) => {
      if (copied + skipped - said < 5000) return;
      said = copied + skipped;
      deps.stderr?.(`migrate: ${n(copied)} copied${skipped ? `, ${n(skipped)} already there` : ''}\n`);
    },
  });
  deps.stdout(formatMigration(a, report));
  return 0;
}
