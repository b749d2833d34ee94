// Runs outside Jest's module system, so it uses the compiled code (`npm test` builds first).
import 'reflect-metadata';
import { connect, migrate } from '../dist/src/db.js';
import { createScratchDatabase } from '../dist/src/infra/database-admin.js';
import { startEmbeddedPostgres } from '../dist/src/infra/embedded-postgres.js';

/**
 * One scratch database per test run, migrated once. Uses DATABASE_URL's server when set (CI), else an
 * embedded PostgreSQL, so `npm test` works on a machine with only Node. Test files isolate their data
 * by creating their own apps (Tollgate's tenants), so they run in parallel on this one database.
 */
export default async function globalSetup() {
  let serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const embedded = await startEmbeddedPostgres({ dir: '.data/test-postgres' });
    globalThis.__tollgateEmbedded = embedded;
    serverUrl = embedded.url;
  }
  const name = `tollgate_test_${process.pid}_${Date.now()}`;
  const url = await createScratchDatabase(serverUrl, name);
  const orm = await connect(url, { pool: { min: 0, max: 2 } });
  try {
    await migrate(orm);
  } finally {
    await orm.close(true);
  }
  process.env.TEST_SERVER_DATABASE_URL = serverUrl;
  process.env.TEST_DATABASE_URL = url;
  process.env.TEST_DATABASE_NAME = name;
}
