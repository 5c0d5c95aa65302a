-- Argo CD health check of a Profile served by profilekit, from its
-- Profile-level Ready condition. Install it under the key
-- resource.customizations.health.kubeflow.org_Profile of the argocd-cm
-- ConfigMap (see examples/deploy/README.md).
--   Healthy      Ready is True for the Profile's current generation
--   Progressing  no Ready yet, Ready set from an older generation, or a
--                plugin that has not reported yet (reason Pending)
--   Degraded     Ready is False for any other reason: a plugin failed
local hs = {status = "Progressing", message = "Waiting for the Ready condition"}
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
for _, c in ipairs(obj.status.conditions) do
  if c.type == "Ready" then
    local gen = obj.metadata.generation
    if c.observedGeneration ~= nil and gen ~= nil and c.observedGeneration ~= gen then
      hs.message = "Ready was set from generation " .. c.observedGeneration .. ", not " .. gen
      return hs
    end
    hs.message = c.message or ""
    if c.status == "True" then
      hs.status = "Healthy"
    elseif string.sub(hs.message, 1, 8) == "Pending:" then
      hs.status = "Progressing"
    else
      hs.status = "Degraded"
    end
    return hs
  end
end
return hs
