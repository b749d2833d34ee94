/**
 * Migration tooling against a scratch database (never your data):
 *   create  — diff the entities against the schema the committed migrations produce, write a new migration
 *   check   — fail (exit 1) when entities and committed migrations disagree; CI runs this
 * Uses DATABASE_URL's server, or embedded PostgreSQL when it is unset.
 */
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { connect, migrate } from '../src/db.js';
import { createScratchDatabase, dropDatabase } from '../src/infra/database-admin.js';
import { startEmbeddedPostgres } from '../src/infra/embedded-postgres.js';

async function main() {
  const command = process.argv[2];
  if (command !== 'create' && command !== 'check') {
    console.error('usage: migrations.js create|check');
    process.exit(2);
  }
  const embedded = process.env.DATABASE_URL
    ? undefined
    : await startEmbeddedPostgres({ dir: '.data/postgres-tools' });
  const serverUrl = process.env.DATABASE_URL ?? embedded!.url;
  const name = `tollgate_migrations_${process.pid}_${Date.now()}`;
  const url = await createScratchDatabase(serverUrl, name);
  let exitCode = 0;
  try {
    const orm = await connect(url);
    try {
      await migrate(orm);
      const diff = (await orm.schema.getUpdateSchemaSQL({ wrap: false, safe: false })).trim();
      if (command === 'check') {
        if (diff) {
          console.error(
            `Entities and migrations disagree. Run \`npm run migration:create\`. Missing SQL:\n${diff}`,
          );
          exitCode = 1;
        } else {
          console.log('migrations: entities and migrations agree');
        }
      } else if (!diff) {
        console.log('migrations: nothing to do, schema is up to date');
      } else {
        const result = await orm.migrator.create('migrations', false, false);
        writeIndex();
        console.log(`migrations: wrote ${result.fileName}`);
      }
    } finally {
      await orm.close(true);
    }
  } finally {
    await dropDatabase(serverUrl, name);
    await embedded?.stop();
  }
  process.exit(exitCode);
}

/** Rewrites migrations/index.ts to list every migration file in name (= time) order. */
function writeIndex() {
  const files = readdirSync('migrations')
    .filter((f) => /^Migration\d+.*\.ts$/.test(f))
    .sort();
  const imports = files.map(
    (f) => `import { ${path.basename(f, '.ts')} } from './${path.basename(f, '.ts')}.js';`,
  );
  const entries = files.map(
    (f) => `  { name: '${path.basename(f, '.ts')}', class: ${path.basename(f, '.ts')} },`,
  );
  writeFileSync(
    'migrations/index.ts',
    `import type { MigrationObject } from '@mikro-orm/core';
${imports.join('\n')}

/**
 * Every migration, in order. Listed explicitly (not discovered from disk) so the same list works from
 * TypeScript in tests and from compiled JavaScript in production. \`npm run migration:create\` rewrites this file.
 */
export const migrationsList: MigrationObject[] = [
${entries.join('\n')}
];
`,
  );
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
