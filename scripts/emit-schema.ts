/**
 * Writes the GraphQL SDL to schema/schema.graphql, or with --check fails when the committed file is stale.
 * The schema is built from the resolvers exactly as the server builds it.
 */
import 'reflect-metadata';
import { readFileSync, writeFileSync } from 'node:fs';
import { lexicographicSortSchema, printSchema } from 'graphql';
import { getSchema } from '../src/graphql-schema.js';

const FILE = 'schema/schema.graphql';

async function main() {
  const schema = lexicographicSortSchema(await getSchema());
  // An object type is named `Subscription` (the billing subscription) while the schema has no subscription
  // operations. graphql-js omits the `schema {}` block for conventional root names, and SDL readers would
  // then take that type for the subscription root; spelling the roots out keeps the file unambiguous.
  const printed = printSchema(schema);
  const roots = [`  query: ${schema.getQueryType()?.name}`, `  mutation: ${schema.getMutationType()?.name}`];
  const sdl = printed.startsWith('schema {')
    ? `${printed}\n`
    : `schema {\n${roots.join('\n')}\n}\n\n${printed}\n`;
  if (process.argv.includes('--check')) {
    let committed = '';
    try {
      committed = readFileSync(FILE, 'utf8');
    } catch {
      // missing counts as stale
    }
    if (committed !== sdl) {
      console.error(`${FILE} is stale: run \`npm run schema:emit\` and commit the result.`);
      process.exit(1);
    }
    console.log(`${FILE} is up to date`);
    return;
  }
  writeFileSync(FILE, sdl);
  console.log(`wrote ${FILE}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
