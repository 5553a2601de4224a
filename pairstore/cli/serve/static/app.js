// One submit per form: the buttons go grey once pressed (the server counts a resubmit once anyway).
document.querySelectorAll("form.once").forEach(function (form) {
  form.addEventListener("submit", function () {
    setTimeout(function () { form.querySelectorAll("button").forEach(function (b) { b.disabled = true; }); }, 0);
  });
});
