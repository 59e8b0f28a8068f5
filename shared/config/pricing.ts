import { Type as T } from '@sinclair/typebox';

const Price = (d: number, description: string) => T.Integer({ minimum: 0, default: d, description });

export const PricingConfig = T.Object(
  {
    websitepro: T.Object(
      {
        metadata: Price(20, 'Payloads for the metadata output.'),
        markdown: Price(30, 'Payloads for the markdown output.'),
        text: Price(20, 'Payloads for the text output.'),
        html: Price(30, 'Payloads for the sanitised html output.'),
        pdf: Price(100, 'Payloads for the pdf output.'),
        links: Price(10, 'Payloads for the links output (every link of the page, JSON).'),
        images: Price(10, 'Payloads for the images output (every image of the page, JSON).'),
        rawHtml: Price(10, 'Payloads for the rawHtml output (the HTML as fetched or rendered).'),
        map: Price(50, 'Payloads per block of 1,000 URLs a map lists (the quote is ceil(limit/1000) blocks; unused blocks are refunded).'),
        render: Price(
          40,
          'Payloads once per job whose page is rendered in a browser before conversion (waitFor, actions); a pdf-only job does not pay it.',
        ),
      },
      { default: {} },
    ),
    shots: T.Object(
      {
        screenshot: Price(50, 'Payloads per screenshot (browser version x viewport x scheme).'),
        fullPage: Price(20, 'Extra Payloads per screenshot with options.fullPage.'),
        retina: Price(10, 'Extra Payloads per screenshot with options.retina.'),
        comparePair: Price(20, 'Payloads per compared pair of screenshots with options.compare (a diff image and its summary).'),
        scripted: Price(10, 'Extra Payloads per screenshot that works on the page first (options css, js, click, waitFor or actions).'),
        blockAds: Price(5, 'Extra Payloads per screenshot with options.blockAds (every request matched against the filter lists).'),
      },
      { default: {} },
    ),
    labs: T.Object(
      {
        quick: Price(500, 'Payloads for the quick module.'),
        conformance: Price(2000, 'Payloads for the conformance module.'),
        customPerCheck: Price(50, 'Payloads per selected check in a custom result.'),
        customMin: Price(200, 'Smallest price of a custom result.'),
        dataset: Price(300, 'One-time fee, per wallet, for the first job that needs the test dataset.'),
      },
      { default: {} },
    ),
  },
  { default: {} },
);
