package blobcsi

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/profilekit/profilekit/plugins"
)

// The keys of the credentials Secret, as the blob CSI driver reads them too.
const (
	SecretAccountName = "azurestorageaccountname"
	SecretAccountKey  = "azurestorageaccountkey"
)

// containers reaches the blob service of instances.
type containers struct {
	// reader reads the credentials Secrets.
	reader client.Reader
	// transport, when set, carries every request, to Azure Storage and to
	// Microsoft Entra ID (a proxy, a private CA, tests that count them).
	transport *http.Client
	// principals are the config's service principals.
	principals map[string]Principal
	// tokens keeps token credentials (and so their tokens) across passes.
	tokens *tokenCache
}

// clientOptions are the SDK options of every client: one try, through the
// transport. The outside-call mechanism bounds it by the host's timeout for
// outside calls and retries with backoff.
func (c containers) clientOptions() azcore.ClientOptions {
	o := azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}
	if c.transport != nil {
		o.Transport = c.transport
	}
	return o
}

// client returns a container client for one container of an instance,
// authenticated as the instance's credentials say.
func (c containers) client(ctx context.Context, in Instance, name string) (*container.Client, error) {
	opts := &service.ClientOptions{ClientOptions: c.clientOptions()}
	var svc *service.Client
	switch in.Credentials.typ() {
	case AccountKey:
		cred, err := c.sharedKey(ctx, in)
		if err != nil {
			return nil, err
		}
		if svc, err = service.NewClientWithSharedKeyCredential(in.endpoint()+"/", cred, opts); err != nil {
			return nil, fmt.Errorf("blob client of instance %s: %w", in.Name, err)
		}
	default:
		cred, err := c.token(ctx, in)
		if err != nil {
			return nil, err
		}
		if svc, err = service.NewClient(in.endpoint()+"/", cred, opts); err != nil {
			return nil, fmt.Errorf("blob client of instance %s: %w", in.Name, err)
		}
	}
	return svc.NewContainerClient(name), nil
}

// sharedKey reads the account key from the instance's Secret.
func (c containers) sharedKey(ctx context.Context, in Instance) (*service.SharedKeyCredential, error) {
	var s corev1.Secret
	key := client.ObjectKey{Namespace: in.Credentials.SecretNamespace, Name: in.Credentials.SecretName}
	if err := c.reader.Get(ctx, key, &s); err != nil {
		return nil, fmt.Errorf("read credentials Secret %s of instance %s: %w", key, in.Name, err)
	}
	account := string(s.Data[SecretAccountName])
	if account == "" {
		account = in.Account
	}
	cred, err := service.NewSharedKeyCredential(account, string(s.Data[SecretAccountKey]))
	if err != nil {
		// Never the key itself: only which Secret and key is wrong.
		return nil, plugins.Terminalf(plugins.ReasonInvalidConfig, "credentials Secret %s of instance %s: key %s is not a valid account key", key, in.Name, SecretAccountKey)
	}
	return cred, nil
}

// The container metadata that proves profilekit made a container for a
// Profile. Azure metadata names are C# identifiers and case-insensitive.
const (
	MetaPlugin     = "profilekit_plugin"
	MetaProfile    = "profilekit_profile"
	MetaProfileUID = "profilekit_profileuid"
)

// proof is who a container was made for.
type proof struct {
	Profile, UID string
}

func (pr proof) metadata() map[string]*string {
	return map[string]*string{MetaPlugin: to.Ptr(Kind), MetaProfile: to.Ptr(pr.Profile), MetaProfileUID: to.Ptr(pr.UID)}
}

// proofOf reads the proof in a container's metadata, if it has one.
func proofOf(md map[string]*string) (proof, bool) {
	get := func(key string) string {
		for k, v := range md {
			if strings.EqualFold(k, key) && v != nil {
				return *v
			}
		}
		return ""
	}
	if get(MetaPlugin) != Kind || get(MetaProfileUID) == "" {
		return proof{}, false
	}
	return proof{Profile: get(MetaProfile), UID: get(MetaProfileUID)}, true
}

// takeOver says whether a container without proof for this Profile may be
// used (and is stamped with the proof): made by an earlier version (legacy),
// made for an earlier Profile of the name that the Profile's owner held
// (earlier: their UIDs), or adopted by the host's explicit choice (adopt).
type takeOver struct {
	legacy  func(ctx context.Context) (bool, error)
	earlier func(ctx context.Context) ([]string, error)
	adopt   bool
}

// mayTake reports whether a container whose proof is got (proven) or that
// has none may be stamped for this Profile and used.
func (t takeOver) mayTake(ctx context.Context, got proof, proven bool) (bool, error) {
	switch {
	case t.adopt:
		return true, nil
	case proven && t.earlier != nil:
		uids, err := t.earlier(ctx)
		return slices.Contains(uids, got.UID), err
	case !proven && t.legacy != nil:
		return t.legacy(ctx)
	}
	return false, nil
}

// ensure creates the container with the proof of want. A container that
// exists already is used when it carries that proof; when it does not, it
// is stamped and used only when take allows, else it is a Conflict and
// nothing is written to it.
func (c containers) ensure(ctx context.Context, in Instance, name string, want proof, take takeOver) error {
	cc, err := c.client(ctx, in, name)
	if err != nil {
		return err
	}
	_, err = cc.Create(ctx, &container.CreateOptions{Metadata: want.metadata()})
	if err == nil {
		return nil
	}
	if !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return fmt.Errorf("create container %s in account %s: %w", name, in.Account, err)
	}
	props, err := cc.GetProperties(ctx, nil)
	if err != nil {
		return fmt.Errorf("read container %s in account %s: %w", name, in.Account, err)
	}
	got, proven := proofOf(props.Metadata)
	if proven && got.UID == want.UID {
		return nil
	}
	taken, err := take.mayTake(ctx, got, proven)
	if err != nil {
		return err
	}
	if !taken {
		whose := "carries no proof that profilekit made it for Profile " + want.Profile
		if proven {
			whose = fmt.Sprintf("was made by profilekit for another Profile %s (UID %s), not for Profile %s (UID %s)", got.Profile, got.UID, want.Profile, want.UID)
		}
		return plugins.Terminalf(plugins.ReasonConflict,
			"container %s in account %s (instance %s) exists and %s; it is left untouched and not mounted (rename it, or set adoptContainers on the instance to take it over)",
			name, in.Account, in.Name, whose)
	}
	md := map[string]*string{}
	for k, v := range props.Metadata {
		if _, ours := want.metadata()[strings.ToLower(k)]; !ours {
			md[k] = v
		}
	}
	maps.Copy(md, want.metadata())
	if _, err := cc.SetMetadata(ctx, &container.SetMetadataOptions{Metadata: md}); err != nil {
		return fmt.Errorf("write the proof on container %s in account %s: %w", name, in.Account, err)
	}
	return nil
}

// removed says what remove did with a container.
type removed int

const (
	removedGone removed = iota
	removedDeleted
	removedNotOurs
)

// remove deletes the container and its blobs when it carries the proof of
// want (or is legacy: made by an earlier version, which wrote no proof); a
// container that is gone is fine, and any other is left alone.
func (c containers) remove(ctx context.Context, in Instance, name string, want proof, legacy bool) (removed, error) {
	cc, err := c.client(ctx, in, name)
	if err != nil {
		return removedGone, err
	}
	props, err := cc.GetProperties(ctx, nil)
	if bloberror.HasCode(err, bloberror.ContainerNotFound, bloberror.ContainerBeingDeleted) {
		return removedGone, nil
	}
	if err != nil {
		return removedGone, fmt.Errorf("read container %s in account %s: %w", name, in.Account, err)
	}
	got, proven := proofOf(props.Metadata)
	if !(proven && got.UID == want.UID) && !(!proven && legacy) {
		return removedNotOurs, nil
	}
	// Unmodified since the proof was read: a container replaced meanwhile
	// is not deleted.
	_, err = cc.Delete(ctx, &container.DeleteOptions{AccessConditions: &container.AccessConditions{
		ModifiedAccessConditions: &container.ModifiedAccessConditions{IfUnmodifiedSince: props.LastModified}}})
	if err != nil && !bloberror.HasCode(err, bloberror.ContainerNotFound, bloberror.ContainerBeingDeleted) {
		return removedGone, fmt.Errorf("delete container %s in account %s: %w", name, in.Account, err)
	}
	return removedDeleted, nil
}
