import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The layering docs/architecture.md describes, checked on the source's own import
 * statements, so a shortcut (a router importing the service graph, an entity in the GraphQL edge) fails
 * here instead of quietly growing back.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const SRC = path.join(ROOT, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** Every module a file imports: relative ones as paths from the repository root, packages by name. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/g)].map(
    (match) => match[1]!,
  );
  specifiers.push(...[...text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((match) => match[1]!));
  return specifiers.map((specifier) =>
    specifier.startsWith('.')
      ? path.relative(ROOT, path.resolve(path.dirname(file), specifier)).replace(/\.js$/, '.ts')
      : specifier,
  );
}

function violations(dir: string, forbidden: (target: string) => boolean): string[] {
  return sourceFiles(path.join(SRC, dir)).flatMap((file) =>
    importsOf(file)
      .filter(forbidden)
      .map((target) => `${path.relative(ROOT, file)} -> ${target}`),
  );
}

const COMPOSITION = ['src/services.ts', 'src/db.ts', 'src/graphql-schema.ts', 'src/app.ts', 'src/server.ts'];

describe('layers', () => {
  it('finds the imports it checks (the scan itself works)', () => {
    expect(importsOf(path.join(SRC, 'rest/v1.ts'))).toContain('src/modules/customers/customers.rest.ts');
  });

  it('keeps core/ free of modules, infrastructure and composition', () => {
    expect(
      violations('core', (target) => target.startsWith('src/') && !target.startsWith('src/core/')),
    ).toEqual([]);
  });

  it('keeps infra/ below the modules', () => {
    expect(
      violations('infra', (target) => target.startsWith('src/modules/') || COMPOSITION.includes(target)),
    ).toEqual([]);
  });

  it('keeps the GraphQL edge free of entities, the ORM and the modules', () => {
    expect(
      violations(
        'graphql',
        (target) =>
          target.startsWith('@mikro-orm/') ||
          target.startsWith('src/modules/') ||
          COMPOSITION.includes(target),
      ),
    ).toEqual([]);
  });

  it('lets no module import the composition root', () => {
    expect(violations('modules', (target) => COMPOSITION.includes(target))).toEqual([]);
  });

  it('keeps the payment port free of entities', () => {
    expect(
      importsOf(path.join(SRC, 'modules/payments/payment-provider.ts')).filter((target) =>
        target.endsWith('.entity.ts'),
      ),
    ).toEqual([]);
  });
});
