import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import pg from 'pg';

import { migrate } from '../../db/migrate.ts';
import { startEmbeddedPostgres } from '../../shared/embedded/postgres.ts';
import { startEmbeddedS3 } from '../../shared/embedded/s3.ts';
import { ensureChromium } from '../../worker/render/chromium.ts';
import { templateDatabase } from './database.ts';
import { ensureDebianPackages } from './debianPackages.ts';
import { pgbouncerPackage } from './pgbouncer.ts';
import { prometheusPackage } from './prometheus.ts';

/**
 * Once per run: a PostgreSQL server (DATABASE_URL's, or an embedded one in a temp dir), a template
 * database with every migration applied, and a real S3-protocol server. Each test file clones the
 * template, so files run in parallel without truncating anything. The deck renderer's Chromium is
 * unpacked here too, so test workers find it ready instead of racing to unpack it, and Debian's
 * pgbouncer and prometheus packages installed when missing (once, not by two test files at once).
 */
export default async function globalSetup(): Promise<void> {
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'svc-test-'));
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const server = await startEmbeddedPostgres(path.join(scratch, 'postgres'), { fast: true });
    (globalThis as Record<string, unknown>).__svcPostgres = server;
    adminUrl = server.adminUrl;
  }
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${templateDatabase} with (force)`);
  await admin.query(`create database ${templateDatabase}`);
  await admin.end();
  const templateUrl = new URL(adminUrl);
  templateUrl.pathname = `/${templateDatabase}`;
  await migrate(templateUrl.toString());
  const s3 = await startEmbeddedS3(path.join(scratch, 's3'), 'svc-test');
  (globalThis as Record<string, unknown>).__svcS3 = s3;
  process.env.SVC_TEST_ADMIN_URL = adminUrl;
  process.env.SVC_TEST_S3_ENDPOINT = s3.endpoint;
  process.env.SVC_TEST_SCRATCH = scratch;
  await ensureChromium();
  await ensureDebianPackages([pgbouncerPackage, prometheusPackage]);
}
