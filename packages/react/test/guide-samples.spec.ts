import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..', '..');
const TSC = require.resolve('typescript/bin/tsc', { paths: [ROOT] });

/** What the guide's component examples take from the web app around them: its own components and styles. */
const GUIDE_CONTEXT = `
declare module '*.css';
declare function SsoSettings(): import('react').JSX.Element;
declare function AuditLog(): import('react').JSX.Element;
`;

/** Every \`\`\`tsx block of a page, in order. */
function tsxBlocks(page: string): string[] {
  return [...readFileSync(join(ROOT, page), 'utf8').matchAll(/^```tsx\n([\s\S]*?)^```$/gm)].map((match) => match[1]!);
}

/**
 * The integration guide's React examples (a pricing page, a gate) compile as a web app's strict project
 * compiles them, against the components as built: their declarations built here by the package's own
 * tsconfig into a folder of this test (not the package's dist/, which nothing else then races), the client
 * from its sources in both steps (its dist/ is removed and rebuilt by the strict-project spec meanwhile: the
 * components' build once failed on that race), React's own types.
 * The project sits under test-results/ in the repository, so that `react` resolves as in a web app.
 */
describe("the integration guide's React examples", () => {
  let project: string;
  beforeAll(() => {
    mkdirSync(join(ROOT, 'test-results'), { recursive: true });
    project = mkdtempSync(join(ROOT, 'test-results', 'guide-samples-'));
  });
  afterAll(() => rmSync(project, { recursive: true, force: true }));

  it('compile in a strict project against the built components', async () => {
    // The package's tsconfig, with the client mapped to its sources: its dist/ may be missing at any moment.
    const built = join(project, 'built');
    const packages = join(ROOT, 'packages');
    writeFileSync(
      join(project, 'tsconfig.react.json'),
      JSON.stringify({
        extends: join(packages, 'react', 'tsconfig.json'),
        compilerOptions: {
          rootDir: packages,
          outDir: built,
          emitDeclarationOnly: true,
          paths: { '@billing-licensing/client': [join(packages, 'client', 'src', 'index.ts')] },
        },
        include: [join(packages, 'react', 'src')],
      }),
    );
    await run(process.execPath, [TSC, '-p', join(project, 'tsconfig.react.json')]).catch((err: { stdout: string }) => {
      throw new Error(`building the components' declarations failed:\n${err.stdout}`);
    });

    const blocks = tsxBlocks('docs/integrating.md');
    expect(blocks.length).toBeGreaterThanOrEqual(2);
    const files: Record<string, string> = { 'guide-context.d.ts': GUIDE_CONTEXT };
    blocks.forEach((block, i) => (files[`guide-${i + 1}.tsx`] = block));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(project, name), text);
    const compilerOptions = {
      strict: true,
      exactOptionalPropertyTypes: true,
      noUncheckedIndexedAccess: true,
      module: 'es2022',
      moduleResolution: 'bundler',
      target: 'es2022',
      lib: ['es2022', 'dom', 'dom.iterable'],
      jsx: 'react-jsx',
      types: [],
      noEmit: true,
      skipLibCheck: true,
      paths: {
        '@billing-licensing/react': [join(built, 'react', 'src', 'index.d.ts')],
        '@billing-licensing/client': [join(ROOT, 'packages', 'client', 'src', 'index.ts')],
      },
    };
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: Object.keys(files) }));
    const errors = await run(process.execPath, [TSC, '-p', project], { cwd: project }).then(
      () => '',
      (err: { stdout: string }) => err.stdout,
    );
    expect(errors).toBe('');
  }, 180_000);
});
