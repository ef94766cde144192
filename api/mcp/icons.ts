/**
 * The icons MCP clients show beside the server, its tools, resources and prompts (the spec's
 * `icons`: src, mimeType, sizes). Inline SVG data URIs: no request to our origin, nothing to host.
 */
function svgIcon(path: string): { src: string; mimeType: string; sizes: string[] }[] {
  const svg =
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="#4f46e5" ' +
    `stroke-width="2" stroke-linecap="round" stroke-linejoin="round">${path}</svg>`;
  return [
    {
      src: `data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')}`,
      mimeType: 'image/svg+xml',
      sizes: ['any'],
    },
  ];
}

export const icons = {
  server: svgIcon('<rect x="3" y="4" width="18" height="16" rx="3"/><path d="M7 9h10M7 13h6"/>'),
  task: svgIcon(
    '<path d="M9 11l3 3 8-8"/><path d="M20 12v7a1 1 0 0 1-1 1H5a1 1 0 0 1-1-1V5a1 1 0 0 1 1-1h11"/>',
  ),
  file: svgIcon(
    '<path d="M14 3H6a1 1 0 0 0-1 1v16a1 1 0 0 0 1 1h12a1 1 0 0 0 1-1V8z"/><path d="M14 3v5h5"/>',
  ),
  page: svgIcon('<path d="M4 5a2 2 0 0 1 2-2h12v18H6a2 2 0 0 1-2-2z"/><path d="M8 7h6M8 11h6"/>'),
  workflow: svgIcon(
    '<circle cx="6" cy="6" r="2"/><circle cx="18" cy="18" r="2"/><path d="M8 6h6a4 4 0 0 1 0 8h-4a4 4 0 0 0 0 8"/>',
  ),
  staff: svgIcon('<circle cx="12" cy="8" r="4"/><path d="M4 21a8 8 0 0 1 16 0"/>'),
  search: svgIcon('<circle cx="11" cy="11" r="7"/><path d="M21 21l-4.3-4.3"/>'),
  project: svgIcon('<path d="M3 7h7l2 2h9v10H3z"/>'),
} as const;
