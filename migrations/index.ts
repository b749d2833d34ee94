import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261121214853 } from './Migration20261121214853.js';
import { Migration20261121215340 } from './Migration20261121215340.js';
import { Migration20261121215352 } from './Migration20261121215352.js';
import { Migration20261121220227 } from './Migration20261121220227.js';
import { Migration20261123020903 } from './Migration20261123020903.js';
import { Migration20261123021638 } from './Migration20261123021638.js';
import { Migration20261123041656 } from './Migration20261123041656.js';
import { Migration20261123041750 } from './Migration20261123041750.js';
import { Migration20261123042017 } from './Migration20261123042017.js';
import { Migration20261125110500 } from './Migration20261125110500.js';
import { Migration20261125112033 } from './Migration20261125112033.js';
import { Migration20261125120000 } from './Migration20261125120000.js';
import { Migration20261125181650 } from './Migration20261125181650.js';
import { Migration20261125181833 } from './Migration20261125181833.js';
import { Migration20261125181853 } from './Migration20261125181853.js';
import { Migration20261125193133 } from './Migration20261125193133.js';
import { Migration20261126140711 } from './Migration20261126140711.js';
import { Migration20261126141000 } from './Migration20261126141000.js';
import { Migration20261126141022 } from './Migration20261126141022.js';
import { Migration20261126141535 } from './Migration20261126141535.js';
import { Migration20261126150000 } from './Migration20261126150000.js';
import { Migration20261126160000 } from './Migration20261126160000.js';
import { Migration20261126170000 } from './Migration20261126170000.js';
import { Migration20261126171604 } from './Migration20261126171604.js';
import { Migration20261126180000 } from './Migration20261126180000.js';
import { Migration20261126181500 } from './Migration20261126181500.js';
import { Migration20261126202842 } from './Migration20261126202842.js';
import { Migration20261126234136 } from './Migration20261126234136.js';
import { Migration20261127050000 } from './Migration20261127050000.js';
import { Migration20261127100000 } from './Migration20261127100000.js';
import { Migration20261127160000 } from './Migration20261127160000.js';
import { Migration20261127170000 } from './Migration20261127170000.js';
import { Migration20261127200000 } from './Migration20261127200000.js';
import { Migration20261128000000 } from './Migration20261128000000.js';

/**
 * Every migration, in order. Listed explicitly (not discovered from disk) so the same list works from
 * TypeScript in tests and from compiled JavaScript in production. `npm run migration:create` rewrites this file.
 */
export const migrationsList: MigrationObject[] = [
  { name: 'Migration20261121214853', class: Migration20261121214853 },
  { name: 'Migration20261121215340', class: Migration20261121215340 },
  { name: 'Migration20261121215352', class: Migration20261121215352 },
  { name: 'Migration20261121220227', class: Migration20261121220227 },
  { name: 'Migration20261123020903', class: Migration20261123020903 },
  { name: 'Migration20261123021638', class: Migration20261123021638 },
  { name: 'Migration20261123041656', class: Migration20261123041656 },
  { name: 'Migration20261123041750', class: Migration20261123041750 },
  { name: 'Migration20261123042017', class: Migration20261123042017 },
  { name: 'Migration20261125110500', class: Migration20261125110500 },
  { name: 'Migration20261125112033', class: Migration20261125112033 },
  { name: 'Migration20261125120000', class: Migration20261125120000 },
  { name: 'Migration20261125181650', class: Migration20261125181650 },
  { name: 'Migration20261125181833', class: Migration20261125181833 },
  { name: 'Migration20261125181853', class: Migration20261125181853 },
  { name: 'Migration20261125193133', class: Migration20261125193133 },
  { name: 'Migration20261126140711', class: Migration20261126140711 },
  { name: 'Migration20261126141000', class: Migration20261126141000 },
  { name: 'Migration20261126141022', class: Migration20261126141022 },
  { name: 'Migration20261126141535', class: Migration20261126141535 },
  { name: 'Migration20261126150000', class: Migration20261126150000 },
  { name: 'Migration20261126160000', class: Migration20261126160000 },
  { name: 'Migration20261126170000', class: Migration20261126170000 },
  { name: 'Migration20261126171604', class: Migration20261126171604 },
  { name: 'Migration20261126180000', class: Migration20261126180000 },
  { name: 'Migration20261126181500', class: Migration20261126181500 },
  { name: 'Migration20261126202842', class: Migration20261126202842 },
  { name: 'Migration20261126234136', class: Migration20261126234136 },
  { name: 'Migration20261127050000', class: Migration20261127050000 },
  { name: 'Migration20261127100000', class: Migration20261127100000 },
  { name: 'Migration20261127160000', class: Migration20261127160000 },
  { name: 'Migration20261127170000', class: Migration20261127170000 },
  { name: 'Migration20261127200000', class: Migration20261127200000 },
  { name: 'Migration20261128000000', class: Migration20261128000000 },
];
