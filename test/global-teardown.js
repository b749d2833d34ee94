import { dropDatabase } from '../dist/src/infra/database-admin.js';

export default async function globalTeardown() {
  const serverUrl = process.env.TEST_SERVER_DATABASE_URL;
  const name = process.env.TEST_DATABASE_NAME;
  if (serverUrl && name) await dropDatabase(serverUrl, name);
  await globalThis.__tollgateEmbedded?.stop();
}
