import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(__dirname, '..');

/** The repository's own text: code, tests, scripts and pages (the generated client types aside). */
function trackedText(): { file: string; text: string }[] {
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' }).split('\0');
  return files
    .filter((file) => /\.(ts|js|mjs|md)$/.test(file) && file !== 'packages/client/src/schema.ts')
    .map((file) => ({ file, text: readFileSync(join(ROOT, file), 'utf8') }));
}

/** The numbers of a page's numbered headings: `## 11. …` → 11, `### 11.4 …` → 11.4. */
function sections(page: string): Set<string> {
  const text = readFileSync(join(ROOT, page), 'utf8');
  return new Set([...text.matchAll(/^#{2,3} (\d+(?:\.\d+)?)\.? /gm)].map((match) => match[1]!));
}

/**
 * The code and the pages cite the specification as "spec §N" (docs/spec.md, kept in the repository for that
 * reason) and the interface as docs/interface.md: a citation of anything else (the team's own SPEC file, a
 * seed folder) sends a newcomer to a file they do not have.
 */
describe('citations of the specification and the interface', () => {
  const files = trackedText();

  it('cite no specification or interface file outside the repository', () => {
    const outside = /\bSPEC(?:\.md)?\s*§?\d|\bSPEC\.md\b|service-interface\.md|\bseed\//g;
    const found = files.flatMap(({ file, text }) => [...text.matchAll(outside)].map((match) => `${file}: ${match[0]}`));
    expect(found).toEqual([]);
  });

  it('name sections that docs/spec.md and docs/interface.md have', () => {
    const pages = { spec: sections('docs/spec.md'), interface: sections('docs/interface.md') };
    expect(pages.spec.has('11.4')).toBe(true);
    const missing = files.flatMap(({ file, text }) =>
      [...text.matchAll(/\b(spec|interface) §(\d+(?:\.\d+)?)/gi)]
        .filter((match) => !pages[match[1]!.toLowerCase() as 'spec' | 'interface'].has(match[2]!))
        .map((match) => `${file}: ${match[0]}`),
    );
    expect(missing).toEqual([]);
  });
});
