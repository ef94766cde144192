import type { RequestHandler } from 'express';

import type { BrowserContext } from '../browserContext.ts';
import { copyButton, html, type SafeHtml } from '../html.ts';
import { consoleContext } from './context.ts';
import { sendConsolePage } from './layout.ts';
import { type Reveal, takeReveal } from './reveals.ts';

function revealView(reveal: Reveal): SafeHtml {
  let secretSeen = false;
  return html`<h1>${reveal.heading}</h1>
    <p class="warning" role="status">${reveal.note} Copy it now: it will not be shown again.</p>
    ${reveal.fields.map((f, i) => {
      // The first secret keeps the id the copy button and the tests know: "secret".
      const id = f.secret && !secretSeen ? 'secret' : `field-${i}`;
      if (f.secret) secretSeen = true;
      return html`<p>
        <label for="${id}">${f.label}</label
        ><input id="${id}" class="${f.secret ? 'secret' : 'mono'}" type="text" readonly value="${f.value}" />
        ${f.secret ? copyButton(id) : ''}
      </p>`;
    })}
    <p><a class="button primary" href="${reveal.back.href}">${reveal.back.label}</a></p>`;
}

const spent = (back: string) =>
  html`<h1>Already shown</h1>
    <p class="alert" role="alert">
      This secret was already shown (or the page expired after five minutes): it is shown only once, and
      nothing was created again. If it was not copied, roll the key or rotate the secret to get a new one.
    </p>
    <p><a class="button" href="${back}">Back to the console</a></p>`;

/** GET /console/:memberId/reveal/:revealId: a secret, once; a reload says it was already shown. */
export function showReveal(web: BrowserContext): RequestHandler {
  return async (req, res) => {
    const c = await consoleContext(web, req, res);
    if (!c) return;
    const reveal = await takeReveal(web, c, req, String(req.params.revealId));
    if (!reveal) return sendConsolePage(res, 410, 'Already shown', c, '', spent(`${c.base}/keys`));
    const section = reveal.back.href.slice(c.base.length + 1).split('/')[0] ?? '';
    sendConsolePage(res, 200, reveal.title, c, section, revealView(reveal), { copy: true });
  };
}
