import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

// docs/architecture.md, "Extending a module": a module's SQL and TypeORM calls live in its *.repository.ts.
const SRC = join(__dirname, '..', 'src');
const DATABASE_CALL = /\.query\s*[<(]|createQueryBuilder|getRepository|preparedQuery\s*[<(]|manager\.(find|save|insert|update|delete)\w*\(/;

/** Files outside a repository allowed to run SQL, and why. */
const MACHINERY: Record<string, string> = {
  'src/database/': "the data layer itself: the transaction helper, preparedQuery, migrations and their lock, start-up checks, the job queue's worker (graphile-worker's own force_unlock_workers, on its own pool)",
};

function callsOutsideRepositories(): string[] {
  const files = (readdirSync(SRC, { recursive: true }) as string[]).filter((path) => path.endsWith('.ts'));
  return files
    .map((path) => `src/${path.split('\\').join('/')}`)
    .filter((path) => !path.endsWith('.repository.ts') && !Object.keys(MACHINERY).some((allowed) => path.startsWith(allowed)))
    .flatMap((path) =>
      readFileSync(join(SRC, relative('src', path)), 'utf8')
        .split('\n')
        .map((line, i) => (DATABASE_CALL.test(line) ? `${path}:${i + 1}: ${line.trim()}` : undefined))
        .filter((hit): hit is string => hit !== undefined),
    );
}

describe('the data layer', () => {
  it("every query and QueryBuilder/Repository call is in a module's *.repository.ts (or the data layer's machinery)", () => {
    // Move the statement into the repository of the table's module, and call that from the service.
    expect(callsOutsideRepositories()).toEqual([]);
  });
});
