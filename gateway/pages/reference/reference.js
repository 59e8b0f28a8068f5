// The API reference at /docs: Scalar's standalone renderer (served from /docs/scalar.js, shipped in
// the @scalar/api-reference npm package) reading /openapi.json. Nothing is loaded from another host:
// no default fonts (the page's CSS names system fonts), no proxy for "try it", no API client
// button, no telemetry; the page's Content-Security-Policy allows nothing but this gateway.
Scalar.createApiReference('#reference', {
  url: '/openapi.json',
  withDefaultFonts: false,
  proxyUrl: '',
  hideClientButton: true,
  telemetry: false,
  showDeveloperTools: 'never',
  agent: { disabled: true },
  mcp: { disabled: true },
  defaultOpenAllTags: true,
  defaultHttpClient: { targetKey: 'shell', clientKey: 'curl' },
  customCss:
    ':root{--scalar-font:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;--scalar-font-code:ui-monospace,"DejaVu Sans Mono",Menlo,monospace}',
});
