package blobcsi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
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
	// transport, when set, carries every request (tests count them).
	transport *http.Client
}

// client returns a container client for one container of an instance,
// with the shared key from the instance's Secret.
func (c containers) client(ctx context.Context, in Instance, name string) (*container.Client, error) {
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
	opts := &service.ClientOptions{ClientOptions: azcore.ClientOptions{
		// The outside-call mechanism retries with backoff; one quick try here.
		Retry: policy.RetryOptions{MaxRetries: -1, TryTimeout: 15 * time.Second},
	}}
	if c.transport != nil {
		opts.Transport = c.transport
	}
	svc, err := service.NewClientWithSharedKeyCredential(in.endpoint()+"/", cred, opts)
	if err != nil {
		return nil, err
	}
	return svc.NewContainerClient(name), nil
}

// ensure creates the container; one that exists already is fine.
func (c containers) ensure(ctx context.Context, in Instance, name string) error {
	cc, err := c.client(ctx, in, name)
	if err != nil {
		return err
	}
	_, err = cc.Create(ctx, nil)
	if err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
		return fmt.Errorf("create container %s in account %s: %w", name, in.Account, err)
	}
	return nil
}

// remove deletes the container and its blobs; one that is gone is fine.
func (c containers) remove(ctx context.Context, in Instance, name string) error {
	cc, err := c.client(ctx, in, name)
	if err != nil {
		return err
	}
	_, err = cc.Delete(ctx, nil)
	if err != nil && !bloberror.HasCode(err, bloberror.ContainerNotFound, bloberror.ContainerBeingDeleted) {
		return fmt.Errorf("delete container %s in account %s: %w", name, in.Account, err)
	}
	return nil
}
