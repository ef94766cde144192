import express, { type Router } from 'express';

import type { ObjectStore } from '../../../shared/storage/objectStore.ts';
import type { StatusSnapshots } from '../../status/statusSnapshots.ts';
import type { BrowserContext } from '../browserContext.ts';
import { registerApp, showApps } from './appsPages.ts';
import { consoleContext } from './context.ts';
import { confirmRevokeKey, confirmRollKey } from './keysConfirmPages.ts';
import { createKey, revokeKey, rollKey, showKeys, showNewKey } from './keysPages.ts';
import { showLog, showLogs } from './logsPages.ts';
import { consoleNotFound } from './notFoundPage.ts';
import { showReveal } from './revealPage.ts';
import { showStatusPage } from './statusPage.ts';
import { fileContent, showTask, showTasks, videoFile } from './tasksPages.ts';
import { downloadSpendCsv, showSpendRecords, showUsage } from './usagePages.ts';
import { confirmResendSince, confirmWebhookAction } from './webhooksConfirmPages.ts';
import {
  createWebhook,
  expireOldSecret,
  resendFailedSince,
  resendWebhookDelivery,
  rotateWebhook,
  sendTestWebhook,
  showDeliveries,
  showWebhooks,
  toggleWebhook,
} from './webhooksPages.ts';

const formBody = express.urlencoded({ extended: false, limit: '64kb', parameterLimit: 500 });

/**
 * The web console (issue 13) and the public status page, on the browser pages' router: the same
 * session, CSRF tokens and escaping templates as the account pages, and the same domain code as the
 * CLI for every change. Beyond the browser context it reads the status snapshot and, for the media
 * board's downloads, the object store.
 */
export function installConsole(
  pages: Router,
  web: BrowserContext,
  { status, objectStore }: { status: StatusSnapshots; objectStore: ObjectStore },
): void {
  pages.get('/status', showStatusPage(status));
  pages.get('/console', async (req, res) => {
    const person = await web.sessions.current(req);
    if (!person) return res.redirect(303, '/account/sign-in?return_to=/console');
    res.redirect(303, `/console/${person.memberIds[0]!}/keys`);
  });
  pages.get('/console/:memberId', async (req, res) => {
    const c = await consoleContext(web, req, res);
    if (c) res.redirect(303, `${c.base}/keys`);
  });
  pages.get('/console/:memberId/keys', showKeys(web));
  pages.get('/console/:memberId/keys/new', showNewKey(web));
  pages.post('/console/:memberId/keys', formBody, createKey(web));
  pages.get('/console/:memberId/keys/:keyId/revoke', confirmRevokeKey(web));
  pages.post('/console/:memberId/keys/:keyId/revoke', formBody, revokeKey(web));
  pages.get('/console/:memberId/keys/:keyId/roll', confirmRollKey(web));
  pages.post('/console/:memberId/keys/:keyId/roll', formBody, rollKey(web));
  pages.get('/console/:memberId/reveal/:revealId', showReveal(web));
  pages.get('/console/:memberId/logs', showLogs(web));
  pages.get('/console/:memberId/logs/:call', showLog(web));
  pages.get('/console/:memberId/usage', showUsage(web));
  pages.get('/console/:memberId/usage/records', showSpendRecords(web));
  pages.get('/console/:memberId/usage.csv', downloadSpendCsv(web));
  pages.get('/console/:memberId/tasks', showTasks(web));
  pages.get('/console/:memberId/tasks/:taskId', showTask(web));
  pages.get('/console/:memberId/videos/:videoId/file', videoFile(web, objectStore));
  pages.get('/console/:memberId/files/:fileId/content', fileContent(web, objectStore));
  pages.get('/console/:memberId/apps', showApps(web));
  pages.post('/console/:memberId/apps', formBody, registerApp(web));
  pages.get('/console/:memberId/webhooks', showWebhooks(web));
  pages.post('/console/:memberId/webhooks', formBody, createWebhook(web));
  pages.get('/console/:memberId/webhooks/:endpointId', showDeliveries(web));
  pages.get('/console/:memberId/webhooks/:endpointId/rotate', confirmWebhookAction(web, 'rotate'));
  pages.post('/console/:memberId/webhooks/:endpointId/rotate', formBody, rotateWebhook(web));
  pages.get('/console/:memberId/webhooks/:endpointId/disable', confirmWebhookAction(web, 'disable'));
  pages.get('/console/:memberId/webhooks/:endpointId/expire-old-secret', confirmWebhookAction(web, 'expire'));
  pages.post('/console/:memberId/webhooks/:endpointId/expire-old-secret', formBody, expireOldSecret(web));
  pages.post('/console/:memberId/webhooks/:endpointId/test', formBody, sendTestWebhook(web));
  pages.post('/console/:memberId/webhooks/:endpointId/enabled', formBody, toggleWebhook(web));
  pages.get('/console/:memberId/webhooks/:endpointId/resend', confirmResendSince(web));
  pages.post('/console/:memberId/webhooks/:endpointId/resend', formBody, resendFailedSince(web));
  pages.post(
    '/console/:memberId/webhooks/:endpointId/deliveries/:deliveryId/resend',
    formBody,
    resendWebhookDelivery(web),
  );
  pages.all('/console/*rest', consoleNotFound(web));
}
