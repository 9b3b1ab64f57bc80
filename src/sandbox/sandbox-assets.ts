/*
 * The checkout page's one script (served from this origin: the pages' CSP allows no inline script). Progressive
 * enhancement only: the form submits the interval and seats with the payment without it. As the choice changes it
 * writes the period's total, the Pay button's amount and the hidden `total` the server checks before charging,
 * from the provider's unit price on each interval's radio, formatted by Intl like the page's own text.
 */
export const checkoutScript = String.raw`
'use strict';
document.querySelectorAll('form[data-checkout]').forEach(function (form) {
  var money = new Intl.NumberFormat('en-GB', { style: 'currency', currency: form.getAttribute('data-currency') });
  var minor = Math.pow(10, money.resolvedOptions().maximumFractionDigits);
  var perSeat = form.getAttribute('data-per-seat') === 'true';
  var trial = form.getAttribute('data-trial') === 'true';
  var seats = form.querySelector('input[name="seats"]');
  var output = form.querySelector('output');
  var total = form.querySelector('input[name="total"]');
  var pay = form.querySelector('button[data-pay]');
  function update() {
    var interval = form.querySelector('input[name="interval"]:checked');
    var quantity = seats ? Number(seats.value) : 1;
    if (!interval || (seats && !seats.checkValidity()) || !Number.isInteger(quantity) || quantity < 1) return;
    var amount = Number(interval.getAttribute('data-unit-amount')) * quantity;
    var price = money.format(amount / minor);
    output.textContent = price + ' per ' + interval.value + (perSeat ? ' (' + quantity + ' seat' + (quantity === 1 ? '' : 's') + ')' : '');
    total.value = String(amount);
    if (!trial) pay.textContent = 'Pay ' + price;
  }
  form.addEventListener('input', update);
  form.addEventListener('change', update);
});
`;
