import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';

import { setupTestContext, type TestContext } from '../../helpers/context.ts';
import { kindAfterParse, makeDeckPptx, makeXlsx, storeFile } from '../../helpers/documents.ts';
import { createTenant, type Tenant } from '../../helpers/fixtures.ts';

let t: TestContext;
let tenant: Tenant;

beforeAll(async () => {
  t = await setupTestContext();
  tenant = await createTenant(t.deps.pool);
  await t.startWorker();
});
afterAll(() => t.close());

describe('files__parse', () => {
  it('turns each native document into its kind once its bytes parse', async () => {
    const ids = await Promise.all([
      storeFile(t, tenant, 'Home.HTML', Buffer.from('<!doctype html><title>Hi</title><p>Namaste</p>')),
      storeFile(t, tenant, 'list.csv', Buffer.from('name,qty\r\n"Rice, long",2\r\nDal,1\r\n')),
      storeFile(
        t,
        tenant,
        'budget.xlsx',
        await makeXlsx([
          ['item', 'cost'],
          ['tea', 3],
        ]),
      ),
      storeFile(t, tenant, 'deck.pptx', await makeDeckPptx()),
      storeFile(t, tenant, 'notes.txt', Buffer.from('plain')),
    ]);
    const kinds = await Promise.all(ids.map((id) => kindAfterParse(t, id)));
    expect(kinds).toEqual(['page', 'sheet', 'sheet', 'deck', 'file']);
  });

  it('leaves a file that does not parse as kind file', async () => {
    const zipOfNothing = Buffer.from('PK\u0005\u0006' + '\u0000'.repeat(18), 'binary');
    const ids = await Promise.all([
      storeFile(t, tenant, 'broken.pptx', Buffer.from('this is not a zip')),
      storeFile(t, tenant, 'broken.xlsx', zipOfNothing),
      storeFile(t, tenant, 'binary.html', Buffer.from([0xff, 0xfe, 0x00, 0x41])),
      storeFile(t, tenant, 'bad.csv', Buffer.from('a,"unclosed\n')),
    ]);
    const kinds = await Promise.all(ids.map((id) => kindAfterParse(t, id)));
    expect(kinds).toEqual(['file', 'file', 'file', 'file']);
  });
});
