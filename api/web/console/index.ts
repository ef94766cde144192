import express, { type Router } from 'express';

import type { AppDeps } from '../../deps.ts';
import type { OauthServer } from '../oauth/oauthServer.ts';
import { registerApp, showApps } from './appsPages.ts';
import { consoleContext } from './context.ts';
import { createKey, revokeKey, rollKey, showKeys, showNewKey } from './keysPages.ts';
import { showLog, showLogs } from './logsPages.ts';
import { showStatusPage } from './statusPage.ts';
import { fileContent, showTask, showTasks, videoFile } from './tasksPages.ts';
import { downloadSpendCsv, showSpendRecords, showUsage } from './usagePages.ts';
import {
  createWebhook,
  resendWebhookDelivery,
  rotateWebhook,
  showDeliveries,
  showWebhooks,
  toggleWebhook,
} from './webhooksPages.ts';

const formBody = express.urlencoded({ extended: false, limit: '64kb', parameterLimit: 500 });

/**
 * The web console (issue 13) and the public status page, on the account pages' router: the same
 * session, CSRF tokens and escaping templates, and the same domain code as the CLI for every change.
 */
export function installConsole(pages: Router, s: OauthServer, deps: AppDeps): void {
  pages.get('/status', showStatusPage(deps.status));
  pages.get('/console', async (req, res) => {
    const person = await s.sessions.current(req);
    if (!person) return res.redirect(303, '/account/sign-in?return_to=/console');
    res.redirect(303, `/console/${person.memberIds[0]!}/keys`);
  });
  pages.get('/console/:memberId', async (req, res) => {
    const c = await consoleContext(s, req, res);
    if (c) res.redirect(303, `${c.base}/keys`);
  });
  pages.get('/console/:memberId/keys', showKeys(s));
  pages.get('/console/:memberId/keys/new', showNewKey(s));
  pages.post('/console/:memberId/keys', formBody, createKey(s));
  pages.post('/console/:memberId/keys/:keyId/revoke', formBody, revokeKey(s));
  pages.post('/console/:memberId/keys/:keyId/roll', formBody, rollKey(s));
  pages.get('/console/:memberId/logs', showLogs(s));
  pages.get('/console/:memberId/logs/:call', showLog(s));
  pages.get('/console/:memberId/usage', showUsage(s));
  pages.get('/console/:memberId/usage/records', showSpendRecords(s));
  pages.get('/console/:memberId/usage.csv', downloadSpendCsv(s));
  pages.get('/console/:memberId/tasks', showTasks(s));
  pages.get('/console/:memberId/tasks/:taskId', showTask(s));
  pages.get('/console/:memberId/videos/:videoId/file', videoFile(s, deps));
  pages.get('/console/:memberId/files/:fileId/content', fileContent(s, deps));
  pages.get('/console/:memberId/apps', showApps(s));
  pages.post('/console/:memberId/apps', formBody, registerApp(s));
  pages.get('/console/:memberId/webhooks', showWebhooks(s));
  pages.post('/console/:memberId/webhooks', formBody, createWebhook(s));
  pages.get('/console/:memberId/webhooks/:endpointId', showDeliveries(s));
  pages.post('/console/:memberId/webhooks/:endpointId/rotate', formBody, rotateWebhook(s));
  pages.post('/console/:memberId/webhooks/:endpointId/enabled', formBody, toggleWebhook(s));
  pages.post(
    '/console/:memberId/webhooks/:endpointId/deliveries/:deliveryId/resend',
    formBody,
    resendWebhookDelivery(s),
  );
}
