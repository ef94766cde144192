import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from '@jest/globals';

import { dumpSchema } from '../../../db/dumpSchema.ts';
import { urlFor } from '../../helpers/database.ts';
import { templateDatabase } from '../../helpers/database.ts';

const schemaPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../db/schema.sql');

describe('db/schema.sql', () => {
  it('matches what the migrations build (run `npm run db:dump` after adding one)', async () => {
    const migrated = await dumpSchema(urlFor(templateDatabase));
    expect(migrated).toBe(await readFile(schemaPath, 'utf8'));
  });
});
